export { freePort, onFreePorts, PortTakenError } from "../../core/net.js";
