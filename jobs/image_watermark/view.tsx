// The dashboard's result view: the source beside the output.
export { BeforeAfter as default } from "../../ui/src/results.js";
