package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// State is what a node does in the cluster: the HA loop's state. One loop
// per session (haLoop.run) reads what etcd and the node's data say
// (reading), decides the next state and what to do (decide), acts, and
// logs one sentence with the state and the reason whenever it changes
// state or acts. The loop alone writes the state and the role.
type State uint8

// The states, in the order a node usually goes through them.
const (
	// NoEtcd: the node holds no session: etcd does not answer, or has not
	// been reached yet.
	NoEtcd State = iota
	// CatchingUp: this node's copy of the data is not eligible (it lags
	// too far, or the leader's commits are not in the replica): it stands
	// aside from the election until it catches up.
	CatchingUp
	// Campaigning: eligible and in the election; no leader is known.
	Campaigning
	// Following: another node leads; this one follows it, forwards
	// requests to it and waits in the election.
	Following
	// Promoting: this node has won the election; it promotes its copy
	// and ships its term's first snapshot, and does not serve yet.
	Promoting
	// Leading: this node serves: its fence is open.
	Leading
	// Fenced: this node won, but its lease is no longer provably held, or
	// its keys in etcd are no longer its own, or it cannot promote: its
	// fence is closed, and it steps down.
	Fenced
	// Stopped: the node resigned or is being closed: it never campaigns
	// again in this process.
	Stopped
)

var stateNames = [...]string{
	NoEtcd:      "no etcd",
	CatchingUp:  "catching up",
	Campaigning: "campaigning",
	Following:   "following",
	Promoting:   "promoting",
	Leading:     "leading",
	Fenced:      "fenced",
	Stopped:     "stopped",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state %d", s)
}

// role is the role a node in state s shows to the others (its
// registration, the gate, the metrics); leaderKnown says whether another
// node is known to lead.
func (s State) role(leaderKnown bool) Role {
	switch {
	case s == Leading:
		return Leader
	case (s == Following || s == CatchingUp) && leaderKnown:
		return Follower
	}
	return Candidate
}

// reading is what one cycle of the loop knows: what etcd said (through the
// session, the election, the leader's key and this node's own keys), what
// the node's data says, and the fence's clock.
type reading struct {
	// etcd says why the session is lost; nil while it is held.
	etcd error
	// stopping: the node resigned, or is being closed.
	stopping bool
	// ineligible says why this node's copy may not campaign; nil: it may.
	ineligible error
	// leader is the leader the election names, when another node.
	leader *LeaderInfo
	// inElection: this node's campaign runs (its key is in the election).
	inElection bool
	// won: this node's election key is the election's first.
	won bool
	// serving: the node serves its term (Serving recorded it, and the
	// fence opened).
	serving bool
	// leaseHeld: the session's lease is provably held now (the fence).
	leaseHeld bool
	// keysLost says why this node's keys in etcd are no longer its own.
	keysLost error
	// gaveUp says why this node gives up the term it won (it cannot
	// promote, or cannot record that it serves).
	gaveUp error
}

// action is what the loop does after it decided.
type action uint8

const (
	// stay: nothing to do.
	stay action = iota
	// campaign: enter the election (no-op while in it).
	campaign
	// leave: leave the election (etcd's campaign deletes the node's key).
	leave
	// win: the node won: it names itself leader, guards its keys, deposes
	// any node still registered as the leader, and starts promoting
	// (Options.OnElected).
	win
	// stepDown: the fence closes, what the node committed is shipped
	// (Options.OnSteppedDown), its lease is revoked, and the session ends.
	stepDown
	// stop: the fence closes and the session ends, with no rejoin.
	stop
	// reconnect: the session ends; Run opens another.
	reconnect
)

// decision is what decide chose: the next state, the action, and why.
type decision struct {
	state  State
	act    action
	reason string
}

// decide is the HA loop's rule: from the state s and what the cycle read,
// the next state and what to do. It reads no clock and no etcd: every fact
// is in r.
func decide(s State, r reading) decision {
	won := s == Promoting || s == Leading
	switch {
	case r.stopping:
		return decision{Stopped, stop, "the node is stopping"}
	case won && r.keysLost != nil:
		return decision{Fenced, stepDown, r.keysLost.Error()}
	case won && r.gaveUp != nil:
		return decision{Fenced, stepDown, r.gaveUp.Error()}
	case won && r.etcd != nil:
		return decision{Fenced, stepDown, r.etcd.Error()}
	case won && !r.leaseHeld:
		return decision{Fenced, stepDown, "the lease is no longer provably held: no renewal reached etcd in time"}
	case r.etcd != nil:
		return decision{NoEtcd, reconnect, r.etcd.Error()}
	case s == Promoting && r.serving:
		return decision{Leading, stay, "the term's replica holds the database; serving"}
	case won:
		return decision{s, stay, ""}
	case r.won && !r.leaseHeld:
		return decision{NoEtcd, reconnect, "won the election with a lease no longer provably held"}
	case r.won:
		return decision{Promoting, win, "won the election"}
	case r.ineligible != nil && r.inElection:
		return decision{CatchingUp, leave, r.ineligible.Error()}
	case r.ineligible != nil:
		return decision{CatchingUp, stay, r.ineligible.Error()}
	}
	next, why := Campaigning, "no leader is known"
	if r.leader != nil {
		next, why = Following, fmt.Sprintf("%s leads term %d", r.leader.Node, r.leader.Term)
	}
	if !r.inElection {
		return decision{next, campaign, why}
	}
	return decision{next, stay, why}
}

// saying is the sentence a decision logs: what the node does, or the state
// it entered.
func (d decision) saying() string {
	switch d.act {
	case campaign:
		return "campaigning"
	case leave:
		return "leaving the election"
	case win:
		return "elected leader; promoting"
	case stepDown:
		return "stepped down; writes stopped"
	}
	return d.state.String()
}

// elector is the election as the HA loop uses it: etcd's
// (concurrency.Election), or the tests' in-memory stand-in.
type elector interface {
	Campaign(ctx context.Context, value string) error
	Proclaim(ctx context.Context, value string) error
	Resign(ctx context.Context) error
	Rev() int64
	Key() string
}

// haLoop is one session's HA loop: the session, the election, and what
// the session's watchers said.
type haLoop struct {
	n        *Node
	ctx      context.Context
	tasks    *sync.WaitGroup
	election elector
	lease    int64
	// sessionDone is closed when the session's lease ends.
	sessionDone <-chan struct{}
	// guard watches a leader's keys (Node.guardKeys) and depose revokes the
	// lease of any other node registered as the leader (Node.deposeOthers).
	guard  func(ctx context.Context, key string, term, lease int64) error
	depose func(ctx context.Context) error

	sessionLost <-chan error
	keysLost    chan error
	// campaignEnd is the running campaign's result; nil while none runs.
	campaignEnd   chan error
	stopCampaign  context.CancelFunc
	term          int64 // the term this node won; 0 before it wins
	r             reading
	servingSignal chan chan struct{}
	// giveUp carries why the node gives its term up (Node.giveUp).
	giveUp chan error
	// served is closed once the loop has recorded that the node serves.
	served chan struct{}
	// done is closed when the loop has ended.
	done chan struct{}
}

// run cycles until the session ends, and says why it ended (nil: the node
// stops).
func (l *haLoop) run() error {
	defer close(l.done)
	defer l.leaveElection()
	for {
		l.read()
		d := decide(l.n.State(), l.r)
		l.n.transition(d, l.term)
		if l.served != nil {
			close(l.served) // Serving reads the state now
			l.served = nil
		}
		switch d.act {
		case campaign:
			l.enterElection()
		case leave:
			l.leaveElection()
		case win:
			if err := l.win(); err != nil {
				return err
			}
		case stepDown:
			l.n.stepDown(l.term, errors.New(d.reason))
			return errors.New(d.reason)
		case stop:
			l.n.leaveRole()
			return nil
		case reconnect:
			return errors.New(d.reason)
		}
		l.wait(d.state)
	}
}

// read brings the reading's polled facts up to date; the others come from
// events (wait).
func (l *haLoop) read() {
	l.r.stopping = l.ctx.Err() != nil || l.n.isResigned()
	l.r.leaseHeld = l.n.fence.held()
	l.r.inElection = l.campaignEnd != nil
	l.r.leader = nil
	if leader := l.n.Status().Leader; leader != nil && leader.Node != l.n.cfg.NodeName {
		l.r.leader = leader
	}
	l.r.ineligible = nil
	if !l.r.won && l.n.opts.Eligible != nil {
		l.r.ineligible = l.n.opts.Eligible()
	}
}

// wait returns at the next event, or when a fact the loop polls may have
// changed: eligibility every eligibleEvery, and the fence's end while the
// node has won.
func (l *haLoop) wait(s State) {
	every := eligibleEvery
	if s == Promoting || s == Leading {
		every = max(min(every, l.n.fence.untilEnd()), 10*time.Millisecond)
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	select {
	case <-l.ctx.Done():
	case <-timer.C:
	case <-l.n.wake:
	case err := <-l.sessionLost:
		l.r.etcd = err
	case <-l.sessionDone:
		l.r.etcd = errors.New("the session's lease ended")
	case err := <-l.keysLost:
		l.r.keysLost = err
	case err := <-l.campaignEnd:
		l.campaignEnd, l.stopCampaign = nil, nil
		switch {
		case err == nil:
			l.r.won, l.term = true, l.election.Rev()
		case l.ctx.Err() == nil:
			l.r.etcd = fmt.Errorf("the campaign failed: %w", err)
		}
	case served := <-l.servingSignal:
		l.r.serving, l.served = true, served
	case why := <-l.giveUp:
		l.r.gaveUp = why
	}
}

// enterElection starts the campaign, unless it runs.
func (l *haLoop) enterElection() {
	if l.campaignEnd != nil {
		return
	}
	ctx, cancel := context.WithCancel(l.ctx)
	end := make(chan error, 1)
	l.campaignEnd, l.stopCampaign = end, cancel
	value := l.n.leaderValue(0)
	l.tasks.Go(func() { end <- l.election.Campaign(ctx, value) })
}

// leaveElection ends the campaign, if one runs, and waits for it: etcd's
// Campaign deletes the node's key when its context ends before it wins.
func (l *haLoop) leaveElection() {
	if l.campaignEnd == nil {
		return
	}
	l.stopCampaign()
	if err := <-l.campaignEnd; err == nil {
		// Won just as it left: the key is the election's first, and the
		// lease holds it; resigning gives it up at once.
		rctx, cancel := context.WithTimeout(context.Background(), l.n.cfg.TTL)
		_ = l.election.Resign(rctx)
		cancel()
	}
	l.campaignEnd, l.stopCampaign = nil, nil
}

// win makes the node the leader of the term it won: it names itself
// leader, guards its keys, deposes any other node still registered as the
// leader, and starts promoting (Options.OnElected). Its error ends the
// session.
func (l *haLoop) win() error {
	n := l.n
	n.mu.Lock()
	n.election = l.election
	n.status.Term = l.term
	n.loop = l
	n.mu.Unlock()
	n.setLeader(&LeaderInfo{Node: n.cfg.NodeName, URL: n.cfg.AdvertiseURL, Term: l.term})
	if err := l.election.Proclaim(l.ctx, n.leaderValue(l.term)); err != nil {
		err = fmt.Errorf("cannot name itself leader: %w", err)
		n.stepDown(l.term, err)
		return err
	}
	key := l.election.Key()
	l.tasks.Go(func() { l.keysLost <- l.guard(l.ctx, key, l.term, l.lease) })
	if err := l.depose(l.ctx); err != nil {
		n.stepDown(l.term, err)
		return err
	}
	if elected := n.opts.OnElected; elected != nil {
		// Promoting takes a while, and ends in Serving, which this loop
		// records: it runs beside the loop.
		term := l.term
		l.tasks.Go(func() { elected(term) })
	}
	return nil
}

// giveUp ends term, which this node won but cannot serve: its HA loop
// steps down (Options.OnSteppedDown). It says whether the loop took it (a
// loop that has ended, or is in another term, does not), and returns a
// channel closed when the loop has ended.
func (n *Node) giveUp(term int64, why error) (taken bool, ended <-chan struct{}) {
	n.mu.Lock()
	loop, current := n.loop, n.status.Term
	n.mu.Unlock()
	if loop == nil || current != term {
		return false, nil
	}
	select {
	case loop.giveUp <- why:
		return true, loop.done
	case <-loop.done:
		return false, nil
	}
}

// State is the node's state in the HA loop now.
func (n *Node) State() State {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status.State
}

// transition records d: the state, and the role it shows; it logs one
// sentence when the state changes or the decision acts. It is the one
// writer of the state and the role.
func (n *Node) transition(d decision, term int64) {
	n.mu.Lock()
	from := n.status.State
	n.status.State = d.state
	n.status.Role = d.state.role(n.status.Leader != nil && n.status.Leader.Node != n.cfg.NodeName)
	n.mu.Unlock()
	if from == d.state && d.act == stay {
		return
	}
	level, args := n.logLevel(d), []any{"state", d.state.String(), "from", from.String()}
	if d.reason != "" {
		args = append(args, "reason", d.reason)
	}
	if term != 0 {
		args = append(args, "term", term)
	}
	n.log.Log(context.Background(), level, "Cluster: "+d.saying(), args...)
}

// logLevel is how loud a decision is: a node that loses its term or etcd
// warns.
func (n *Node) logLevel(d decision) slog.Level {
	if d.state == Fenced || d.state == NoEtcd {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
