/** A loop's wait for work: `wait(ms)` ends after ms, or at once when `notify()` is called. */
export class Wakeup {
  private wake: (() => void) | undefined;

  notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
