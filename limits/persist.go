package limits

import (
	"context"
	"math"
	"time"

	"github.com/ulule/limiter/v3"
)

// Day counts are mirrored in the Ledger: staff see them, and an instance
// counting in memory restores them at start. A kill -9 loses at most
// FlushEvery of counting.

// countingRate makes a store report a counter's exact value as limit-remaining.
var countingRate = limiter.Rate{Limit: math.MaxInt64 / 2}

func (l *Limiter) flushLoop() {
	defer close(l.flushDone)
	t := time.NewTicker(l.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stopFlush:
			return
		case <-t.C:
			if err := l.flushDayCounts(); err != nil {
				l.logger.Error("Could not save day counts of API keys", "error", err)
			}
		}
	}
}

func (l *Limiter) flushDayCounts() error {
	var firstErr error
	l.counted.Range(func(id, _ any) bool {
		// Forget the key before reading its count: a request counted from now
		// on marks it again for the next flush.
		l.counted.Delete(id)
		if err := l.saveDayCount(id.(string)); err != nil {
			l.counted.Store(id, struct{}{}) // try again next time
			if firstErr == nil {
				firstErr = err
			}
		}
		return true
	})
	return firstErr
}

func (l *Limiter) saveDayCount(keyID string) error {
	rate := countingRate
	rate.Period = l.cfg.DayWindow
	c, err := l.stores[storeDay].Peek(context.Background(), keyID, rate)
	if err != nil {
		return err
	}
	count := DayCount{KeyID: keyID, Used: rate.Limit - c.Remaining}
	if count.Used > 0 {
		count.Resets = time.Unix(c.Reset, 0)
	}
	return l.ledger.SaveDayCount(count)
}

func (l *Limiter) restoreDayCounts() error {
	counts, err := l.ledger.DayCounts()
	if err != nil {
		return err
	}
	now := time.Now()
	for _, c := range counts {
		left := c.Resets.Sub(now)
		if left <= 0 {
			continue // that window is over
		}
		rate := countingRate
		rate.Period = left // the restored window ends when the saved one did
		if _, err := l.stores[storeDay].Increment(context.Background(), c.KeyID, c.Used, rate); err != nil {
			return err
		}
	}
	return nil
}
