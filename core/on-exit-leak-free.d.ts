// The package ships no types; what core/logger.ts uses of it.
declare module "on-exit-leak-free" {
  /** Calls `fn(object, "exit")` when the process exits, unless `object` was garbage collected first. */
  export function register<T extends object>(object: T, fn: (object: T, event: string) => void): void;
  export function unregister(object: object): void;
}
