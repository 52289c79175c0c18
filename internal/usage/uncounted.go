//go:build usage.uncounted

package usage

// counting is off: this binary is the bench's listPetsUncounted server,
// whose Record counts nothing and whose Thresholds never look.
const counting = false
