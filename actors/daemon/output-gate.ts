// Backpressure from the gateway to the host: the host's stdout is read only while the gateway
// keeps up. Reading as fast as the pipe delivers queued every read in the gateway's mailbox when
// a host streamed faster than the gateway could hand events out (measured: 300 reads, 190 MB).
// Paused, the pipe fills and the host's own writes wait: the stream slows to the daemon's pace.

/** Reads handed to the gateway and not yet handled, past which the host's output is paused… */
const PAUSE_AT = 8;
/** …and resumed once the gateway is down to this many. */
const RESUME_AT = 2;

export class OutputGate {
  private outstanding = 0;
  private paused = false;
  private pause: () => void = () => {};
  private resume: () => void = () => {};

  /** The current host's output (a respawned host replaces the last one's). */
  attach(pause: () => void, resume: () => void): void {
    this.pause = pause;
    this.resume = resume;
    if (this.paused) pause();
  }

  /** A read was handed to the gateway. */
  handedOver(): void {
    this.outstanding++;
    if (!this.paused && this.outstanding >= PAUSE_AT) {
      this.paused = true;
      this.pause();
    }
  }

  /** The gateway has handled one. */
  handled(): void {
    this.outstanding--;
    if (this.paused && this.outstanding <= RESUME_AT) {
      this.paused = false;
      this.resume();
    }
  }
}
