// Package rollgrace is the one rule of a roll's grace period, how long a
// rolled secret (an API key's, a webhook endpoint's) keeps working beside
// the new one: a day unless staff say otherwise, 0 to end the old secret at
// once, at most 30 days. The staff API, the keys command and the rolls
// themselves apply it.
package rollgrace

import (
	"time"

	"petstore/internal/fielderr"
)

const (
	// Default is the grace of a roll that names none.
	Default = 24 * time.Hour
	// Max bounds a grace.
	Max = 30 * 24 * time.Hour
	// Field is the field a refusal of a grace is about.
	Field = "grace"
)

var outOfRange = &fielderr.Kind{Code: "validation_out_of_range"}

// Check refuses a grace below 0 or above Max (a *fielderr.Error).
func Check(grace time.Duration) error {
	if grace < 0 || grace > Max {
		return fielderr.New(outOfRange, Field, "the grace period must be from 0 to %d days (%d seconds)",
			Max/(24*time.Hour), int64(Max/time.Second))
	}
	return nil
}

// FromSeconds is a grace given in whole seconds, as the staff API takes
// it: nil is Default. A number of seconds beyond what a time.Duration
// holds stays out of range rather than wrapping into it: Check refuses it.
func FromSeconds(seconds *int64) time.Duration {
	if seconds == nil {
		return Default
	}
	return time.Duration(min(max(*seconds, -1), int64(Max/time.Second)+1)) * time.Second
}
