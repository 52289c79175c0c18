package limits

import (
	"context"
	"time"

	"petstore/internal/logging"
)

// While Redis fails, each instance decides alone, from what it knows of
// each key: the counts of Redis's last answer, and what it has admitted
// since. One instance therefore never admits more than a quota, and N
// instances at most N times a quota in a window that spans the outage. A
// background probe tries Redis every redisRetryEvery; requests never wait on
// a Redis known to fail. Once Redis answers, the instance gives it what it
// admitted meanwhile, once, before counting there again: its day counts go
// into the day, and its minute counts into the minute window Redis has,
// whichever instance started it (an instance that counted alone may have
// started a window of its own). What Redis lost (restarted empty, or a
// replica promoted before it had every write) comes back the same way, and
// with the next request of each key.

const redisRetryEvery = time.Second

// failed switches counting to memory after a failed Redis call, once.
func (r *redisStore) failed(err error) {
	if !r.up.CompareAndSwap(true, false) {
		return
	}
	r.lostRuns.Add(1)
	r.downSince.Store(time.Now().UnixMilli())
	r.logger.Error("Rate-limit Redis failed; counting in this instance's memory until it answers again",
		"redis", r.where, "error", err)
	r.work.Add(1)
	go r.probe()
}

// probeRedis switches counting back to Redis once it answers again.
func (r *redisStore) probe() {
	defer r.work.Done()
	// What the other instances saved lately: a floor for keys this instance
	// has not counted since it started.
	if err := r.local.readLedger(r.cfg.Now()); err != nil {
		r.logger.Error("Could not read what API keys were served today", "error", err)
	}
	tick := time.NewTicker(redisRetryEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		err := r.ping(ctx)
		cancel()
		if err != nil {
			continue
		}
		keys, err := r.sendUnsent()
		if err != nil {
			continue
		}
		r.up.Store(true)
		// Requests decided in memory while the switch happened: their keys'
		// next requests would carry them too, this carries them at once.
		more, err := r.sendUnsent()
		if err != nil {
			r.failed(err)
			return
		}
		r.logger.Info("Rate-limit Redis answers again; counting in Redis, with what this instance counted meanwhile",
			"redis", r.where, "down_ms", logging.Milliseconds(time.Since(time.UnixMilli(r.downSince.Load()))),
			"admitted", r.meanwhile.admitted.Swap(0), "refused", r.meanwhile.refused.Swap(0),
			"keyless", r.meanwhile.keyless.Swap(0), "keysSent", keys+more)
		return
	}
}

// sendUnsent gives Redis the counts of today that this instance admitted in
// memory and Redis does not have, in one round trip, and says of how many
// keys.
func (r *redisStore) sendUnsent() (int, error) {
	now := r.cfg.Now()
	day := dayOf(now)
	var batch []unsent
	var kcs []*keyCounts
	for i := range r.local.stripes {
		s := &r.local.stripes[i]
		s.mu.Lock()
		for id, kc := range s.keys {
			if kc.unsent && kc.day == day {
				// The quota is of no matter here: only counts are added. The
				// windows' name (a key's id, or CustomerWindows) stands as the
				// key's id: Key.windows names them the same.
				batch = append(batch, unsent{key: Key{ID: id}, known: kc.known()})
				kcs = append(kcs, kc)
			}
		}
		s.mu.Unlock()
	}
	if len(batch) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	answers, err := r.addCounts(ctx, batch, now)
	if err != nil {
		return 0, err
	}
	for i, a := range answers {
		s := r.local.stripe(batch[i].key.ID)
		s.mu.Lock()
		kcs[i].learn(batch[i].known, a)
		s.mu.Unlock()
	}
	return len(batch), nil
}
