/**
 * The benches' chat text: a fixed-seed generator (xorshift32, so runs compare) and sentences of
 * chat words drawn from it.
 */
const words = ("the poll about friday lunch moved to thursday please check @bob link article summary remind me " +
  "tomorrow at nine which one do you mean that one above sounds good thanks 👍 voted already agenda " +
  "draft pdf photo ok sure later meeting notes 🎉 deadline review update").split(" ")

export const makeText = (initialSeed: number) => {
  let seed = initialSeed
  const random = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 0x1_0000_0000
  }
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
  const sentence = () => Array.from({ length: 6 + Math.floor(random() * 14) }, () => pick(words)).join(" ")
  return { random, pick, sentence }
}
