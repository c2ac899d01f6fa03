// A fixed number of places, taken and given back: what may wait at once, what may be open at once.
export class Places {
  taken = 0;

  constructor(readonly max: number) {}

  /** A place, or null when all are taken; the release may be called any number of times. */
  take(): (() => void) | null {
    if (this.taken >= this.max) return null;
    this.taken++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.taken--;
    };
  }
}
