//go:build usage.uncounted

package usage

// counting is off: this binary is the bench's listPetsUncounted server,
// whose Record counts nothing.
const counting = false
