package limits

import (
	"context"
	"math"
	"time"

	"github.com/ulule/limiter/v3"
)

// Day counts are mirrored in the Ledger: staff see them, an instance counting
// in memory restores them at start, and a Redis restarted empty gets them
// back. A kill -9 loses at most FlushEvery of counting.

// countingRate makes a store report a counter's exact value as limit-remaining.
var countingRate = limiter.Rate{Limit: math.MaxInt64 / 2}

func (l *Limiter) flushLoop() {
	defer l.work.Done()
	t := time.NewTicker(l.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if err := l.flushDayCounts(); err != nil {
				l.logger.Error("Could not save day counts of API keys", "error", err)
			}
		}
	}
}

// flushDayCounts saves the day counts of the keys counted since the last
// flush, from where they are counted now.
func (l *Limiter) flushDayCounts() error {
	var ids []string
	l.counted.Range(func(id, _ any) bool {
		// Forget the key before reading its count: a request counted from now
		// on marks it again for the next flush.
		l.counted.Delete(id)
		ids = append(ids, id.(string))
		return true
	})
	if len(ids) == 0 {
		return nil
	}
	counts, err := l.dayCounts(ids)
	if err == nil {
		for _, c := range counts {
			if err = l.ledger.SaveDayCount(c); err != nil {
				break
			}
		}
	}
	if err != nil {
		for _, id := range ids {
			l.counted.Store(id, struct{}{}) // try again next time
		}
	}
	return err
}

func (l *Limiter) dayCounts(ids []string) ([]DayCount, error) {
	now := time.Now()
	if l.inRedis() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return l.shared.dayCounts(ctx, ids, now)
	}
	counts := make([]DayCount, len(ids))
	rate := countingRate
	rate.Period = l.cfg.DayWindow
	for i, id := range ids {
		c, err := l.local[storeDay].Peek(context.Background(), id, rate)
		if err != nil {
			return nil, err
		}
		counts[i] = DayCount{KeyID: id, Used: rate.Limit - c.Remaining}
		if counts[i].Used > 0 {
			counts[i].Resets = time.Unix(c.Reset, 0)
		}
	}
	return counts, nil
}

// restoreDayCounts sets the day windows in memory to the counts saved in the
// ledger.
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
		if err := l.restoreDayCount(c.KeyID, c.Used, left); err != nil {
			return err
		}
	}
	return nil
}

func (l *Limiter) restoreDayCount(keyID string, used int64, left time.Duration) error {
	m := l.lock(keyID)
	defer m.Unlock()
	rate := countingRate
	rate.Period = left // the restored window ends when the saved one did
	ctx := context.Background()
	if _, err := l.local[storeDay].Reset(ctx, keyID, rate); err != nil {
		return err
	}
	_, err := l.local[storeDay].Increment(ctx, keyID, used, rate)
	return err
}
