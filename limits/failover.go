package limits

import (
	"context"
	"time"
)

// While Redis fails, each instance decides alone, from what it knows of
// each key: the counts of Redis's last answer, and what it has admitted
// since. One instance therefore never admits more than a quota, and N
// instances at most N times a quota in a window that spans the outage. A
// background probe tries Redis every redisRetryEvery; requests never wait on
// a Redis known to fail. Once Redis answers, the instance gives it what it
// admitted meanwhile before counting there again; what Redis lost (restarted
// empty) comes back the same way, and with the next request of each key.

const redisRetryEvery = time.Second

// redisFailed switches counting to memory after a failed Redis call, once.
func (l *Limiter) redisFailed(err error) {
	if !l.shared.up.CompareAndSwap(true, false) {
		return
	}
	l.logger.Error("Rate-limit Redis failed; counting in this instance's memory until it answers again",
		"redis", l.shared.where, "error", err)
	l.work.Add(1)
	go l.probeRedis()
}

// probeRedis switches counting back to Redis once it answers again.
func (l *Limiter) probeRedis() {
	defer l.work.Done()
	// What the other instances saved lately: a floor for keys this instance
	// has not counted since it started.
	if err := l.readLedger(l.cfg.Now()); err != nil {
		l.logger.Error("Could not read what API keys were served today", "error", err)
	}
	tick := time.NewTicker(redisRetryEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		err := l.shared.ping(ctx)
		cancel()
		if err != nil || l.sendUnsent() != nil {
			continue
		}
		l.shared.up.Store(true)
		// Requests decided in memory while the switch happened: their keys'
		// next requests would carry them too, this carries them at once.
		if err := l.sendUnsent(); err != nil {
			l.redisFailed(err)
			return
		}
		l.logger.Info("Rate-limit Redis answers again; counting in Redis", "redis", l.shared.where)
		return
	}
}

// sendUnsent gives Redis the counts of today that this instance admitted in
// memory and Redis does not have, in one round trip.
func (l *Limiter) sendUnsent() error {
	now := l.cfg.Now()
	day := dayOf(now)
	var batch []unsent
	var counts []*keyCounts
	for i := range l.stripes {
		s := &l.stripes[i]
		s.mu.Lock()
		for id, kc := range s.keys {
			if kc.unsent && kc.day == day {
				// The quota is of no matter here: only counts are added.
				batch = append(batch, unsent{key: Key{ID: id}, known: kc.known()})
				counts = append(counts, kc)
			}
		}
		s.mu.Unlock()
	}
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	answers, err := l.shared.addCounts(ctx, l.instance, l.cfg, batch, now)
	if err != nil {
		return err
	}
	for i, r := range answers {
		s := l.stripe(batch[i].key.ID)
		s.mu.Lock()
		counts[i].learn(batch[i].known, r)
		s.mu.Unlock()
	}
	return nil
}
