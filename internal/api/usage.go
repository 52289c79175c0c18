package api

import (
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/limits"
	"petstore/internal/usage"
)

// usageReport is getUsage's answer: the caller's key's use today and this
// month, its windows as the rate limit left them after this request, and
// its last days.
type usageReport struct {
	Plan   string      `json:"plan"`
	Today  usageDay    `json:"today"`
	Month  usageMonth  `json:"month"`
	Limits usageLimits `json:"limits"`
	Days   []usageDay  `json:"days"`
}

type usageCounts struct {
	Requests int64 `json:"requests"`
	Served   int64 `json:"served"`
	Refused  int64 `json:"refused"`
	Limited  int64 `json:"limited"`
	Failed   int64 `json:"failed"`
}

type usageDay struct {
	Day string `json:"day"`
	usageCounts
}

type usageMonth struct {
	Month string `json:"month"`
	usageCounts
}

type usageLimits struct {
	PerMinute usageWindow `json:"perMinute"`
	PerDay    usageWindow `json:"perDay"`
}

// usageWindow is a rate window as the rate-limit headers report it.
type usageWindow struct {
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"`
}

func countsOf(c usage.Counts) usageCounts {
	return usageCounts{Requests: c.Requests, Served: c.Served(), Refused: c.Refused, Limited: c.Limited, Failed: c.Failed}
}

func dayOf(d usage.Day) usageDay { return usageDay{d.Day, countsOf(d.Counts)} }

func windowOf(w limits.Window) usageWindow {
	// Whole seconds, rounded up as the headers' reset times are.
	return usageWindow{Limit: w.Limit, Remaining: w.Remaining, Reset: w.Reset.UTC().Add(time.Second - 1).Truncate(time.Second)}
}

// handleGetUsage serves getUsage: the caller's use as its usage history
// has it (this request not yet in it), and its windows as the rate limit
// decided this request.
func handleGetUsage(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		if err := noQuery(e.Request.URL.RawQuery); err != nil {
			return err
		}
		key := apiKeyOf(e)
		d, _ := decisionOf(e) // requireKey has passed: rateLimit decided
		report, err := history.Report(key.ID, d.At)
		if err != nil {
			return err
		}
		answer := usageReport{
			Plan:  key.Plan,
			Today: dayOf(report.Today),
			Month: usageMonth{report.Month.Month, countsOf(report.Month.Counts)},
			Days:  make([]usageDay, len(report.Days)),
		}
		for _, w := range d.Windows {
			switch w.Name {
			case "minute":
				answer.Limits.PerMinute = windowOf(w)
			case "day":
				answer.Limits.PerDay = windowOf(w)
			}
		}
		for i, day := range report.Days {
			answer.Days[i] = dayOf(day)
		}
		return writeJSON(e.Response, http.StatusOK, answer)
	}
}
