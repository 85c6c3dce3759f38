// A job's estimated time left (its record's eta_seconds) in words, as the CLI's progress bar and
// the dashboard's job page say it: rounded as an estimate deserves.

/** "about 40 s left", "about 3 min left", "about 1 h 5 min left"; "almost done" at 0. */
export function describeTimeLeft(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds <= 0) return "almost done";
  if (seconds < 10) return `about ${Math.ceil(seconds)} s left`;
  if (seconds < 60) return `about ${Math.min(55, Math.round(seconds / 5) * 5)} s left`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `about ${minutes} min left`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return `about ${hours} h${rest ? ` ${rest} min` : ""} left`;
}
