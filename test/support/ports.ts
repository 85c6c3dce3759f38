export { freePort } from "../../core/net.js";
