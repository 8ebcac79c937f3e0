/**
 * A byte budget refilled at `rate` per second, holding at most one second's
 * worth: taking more than it holds leaves a debt, and the caller waits the
 * time the refill takes to pay it off (the relay's per-member and total
 * rates, relay-server.ts).
 */
export class TokenBucket {
  private tokens: number
  private at: number

  constructor (private readonly rate: number, now = Date.now()) {
    this.tokens = rate
    this.at = now
  }

  /** Takes `n` bytes; returns how many ms of refill the debt needs (0: within budget). */
  take (n: number, now = Date.now()): number {
    this.tokens = Math.min(this.rate, this.tokens + (Math.max(0, now - this.at) / 1000) * this.rate) - n
    this.at = now
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.rate) * 1000)
  }
}
