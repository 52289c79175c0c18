package limits

import (
	"context"
	"time"
)

// While Redis fails, each instance counts in its own memory, starting from
// the day counts last saved in the ledger: limits keep holding, per
// instance, and every response keeps its headers. A background probe tries
// Redis every redisRetryEvery; requests never wait on a Redis known to fail.

const redisRetryEvery = time.Second

// count decides in Redis while it answers, and in memory otherwise: when
// Redis is known to fail, and when this call finds it failing.
func (l *Limiter) count(inRedis, inMemory func() (Decision, error)) (Decision, error) {
	if l.inRedis() {
		d, err := inRedis()
		if err == nil {
			return d, nil
		}
		l.redisFailed(err)
	}
	return inMemory()
}

// redisFailed switches counting to memory after a failed Redis call, once.
func (l *Limiter) redisFailed(err error) {
	if !l.shared.up.CompareAndSwap(true, false) {
		return
	}
	l.logger.Error("Rate-limit Redis failed; counting in this instance's memory until it answers again",
		"redis", l.shared.where, "error", err)
	if err := l.restoreDayCounts(); err != nil {
		l.logger.Error("Could not read the saved day counts of API keys", "error", err)
	}
	l.work.Add(1)
	go l.probeRedis()
}

// probeRedis switches counting back to Redis once it answers again, after
// saving this instance's day counts and starting in Redis the day windows
// it lost (when it was restarted empty).
func (l *Limiter) probeRedis() {
	defer l.work.Done()
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
		if err != nil {
			continue
		}
		if err := l.flushDayCounts(); err != nil {
			l.logger.Error("Could not save day counts of API keys", "error", err)
		}
		if err := l.seedRedis(); err != nil {
			continue
		}
		l.shared.up.Store(true)
		l.logger.Info("Rate-limit Redis answers again; counting in Redis", "redis", l.shared.where)
		return
	}
}

// seedRedis starts in Redis the day windows saved in the ledger that Redis
// does not have.
func (l *Limiter) seedRedis() error {
	counts, err := l.ledger.DayCounts()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.shared.seedDayCounts(ctx, counts, time.Now())
}
