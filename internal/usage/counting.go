//go:build !usage.uncounted

package usage

// counting is whether Record counts and Thresholds.Observe looks: always,
// but in the binary the bench builds with the tag usage.uncounted to
// measure what counting costs (tools/bench, its target listPetsUncounted).
const counting = true
