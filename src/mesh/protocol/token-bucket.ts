/** A token bucket on the runtime's clock: `rate` tokens per second, at most `burst` saved up. */
export class TokenBucket {
  private tokens: number
  private at: number

  constructor (private readonly rate: number, private readonly burst: number, now: number) {
    this.tokens = burst
    this.at = now
  }

  /** Takes one token; false when none is left. */
  take (now: number): boolean {
    this.refill(now)
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }

  /** Milliseconds until a token is available. */
  waitMs (now: number): number {
    this.refill(now)
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.rate) * 1000)
  }

  private refill (now: number): void {
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate)
      this.at = now
    }
  }
}
