import { readFileSync } from "node:fs";

/** The README's quickstart: the ```sh block after `<!-- quickstart -->` (as test/e2e/fresh-machine.sh reads it). */
export function readmeQuickstart(): string {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const block = /<!-- quickstart -->\s*```sh\n([\s\S]*?)\n```/.exec(readme);
  if (!block) throw new Error("README.md has no ```sh block after <!-- quickstart -->");
  return block[1]!;
}
