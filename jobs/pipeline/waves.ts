// The order of a pipeline's steps in waves (Kahn's order): every step of a wave reads the source or
// a step of an earlier wave. Pure and free of imports, so that the checks of a submission
// (graph.ts), the resources and deadline reckoned from them (core/policy.ts) and the dashboard's
// drawing of a pipeline (view.tsx) follow one rule.

/** What the order needs of a step: the step it reads, if not the source. */
export interface StepInput {
  input?: string | undefined;
}

/** The waves of `names`, and the steps left over when inputs go round in a circle (or name no step). */
export function ordered(
  names: string[],
  steps: Record<string, StepInput>,
): { waves: string[][]; left: string[] } {
  const waves: string[][] = [];
  const done = new Set<string>();
  let left = names;
  while (left.length > 0) {
    const wave = left.filter((name) => {
      const input = steps[name]!.input;
      return input === undefined || done.has(input);
    });
    if (wave.length === 0) break;
    waves.push(wave);
    for (const name of wave) done.add(name);
    left = left.filter((name) => !done.has(name));
  }
  return { waves, left };
}
