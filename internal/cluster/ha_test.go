package cluster

import (
	"errors"
	"strings"
	"testing"
)

// TestHATransitions is the HA loop's rule, transition by transition: from
// a state and what a cycle read, the next state, the action, and the
// reason it gives.
func TestHATransitions(t *testing.T) {
	other := &LeaderInfo{Node: "b", URL: "http://b", Term: 7}
	lagging := errors.New("its copy lags 12s behind the leader")
	keyGone := errors.New("its election key was deleted")
	noEtcd := errors.New("etcd does not answer")
	// held is a reading of a node whose lease is provably held.
	held := func(r reading) reading { r.leaseHeld = true; return r }
	for _, tc := range []struct {
		name   string
		from   State
		read   reading
		want   State
		act    action
		reason string
	}{
		{"a new session, no leader yet: campaign", NoEtcd, held(reading{}), Campaigning, campaign, "no leader is known"},
		{"a new session under a leader: follow and campaign", NoEtcd, held(reading{leader: other}), Following, campaign, "b leads term 7"},
		{"in the election, the leader unchanged: nothing to do", Following, held(reading{leader: other, inElection: true}), Following, stay, "b leads term 7"},
		{"the leader's key gone: campaign on", Following, held(reading{inElection: true}), Campaigning, stay, "no leader is known"},
		{"a lagging copy stands aside before campaigning", NoEtcd, held(reading{leader: other, ineligible: lagging}), CatchingUp, stay, "lags"},
		{"falling behind in the election: leave it", Following, held(reading{leader: other, inElection: true, ineligible: lagging}), CatchingUp, leave, "lags"},
		{"caught up: campaign again", CatchingUp, held(reading{leader: other}), Following, campaign, "b leads"},
		{"won: promote", Following, held(reading{won: true}), Promoting, win, "won the election"},
		{"won with a lease no longer provable: a new session", Campaigning, reading{won: true}, NoEtcd, reconnect, "no longer provably held"},
		{"won as it fell behind: the win counts (eligibility is checked while it waits)", Following, held(reading{won: true, ineligible: lagging}), Promoting, win, "won"},
		{"promoting: wait", Promoting, held(reading{won: true}), Promoting, stay, ""},
		{"promoted and serving: lead", Promoting, held(reading{won: true, serving: true}), Leading, stay, "serving"},
		{"leading, lease held: nothing to do", Leading, held(reading{won: true, serving: true}), Leading, stay, ""},
		{"leading, the lease's provable end passed: fenced, step down", Leading, reading{won: true, serving: true}, Fenced, stepDown, "no longer provably held"},
		{"promoting, the lease's provable end passed: fenced, step down", Promoting, reading{won: true}, Fenced, stepDown, "no longer provably held"},
		{"leading, its election key deleted: fenced, step down", Leading, held(reading{won: true, serving: true, keysLost: keyGone}), Fenced, stepDown, "election key was deleted"},
		{"promoting, its election key deleted: fenced, step down", Promoting, held(reading{won: true, keysLost: keyGone}), Fenced, stepDown, "election key was deleted"},
		{"promoting, cannot promote: fenced, step down", Promoting, held(reading{won: true, gaveUp: errors.New("cannot promote: the replica does not answer")}), Fenced, stepDown, "cannot promote"},
		{"leading, cannot record that it serves: fenced, step down", Leading, held(reading{won: true, serving: true, gaveUp: errors.New("term 9 is over")}), Fenced, stepDown, "term 9 is over"},
		{"leading, the session lost: fenced, step down", Leading, held(reading{won: true, serving: true, etcd: noEtcd}), Fenced, stepDown, "etcd does not answer"},
		{"following, the session lost: a new session", Following, held(reading{leader: other, etcd: noEtcd}), NoEtcd, reconnect, "etcd does not answer"},
		{"catching up, the session lost: a new session", CatchingUp, reading{ineligible: lagging, etcd: noEtcd}, NoEtcd, reconnect, "etcd does not answer"},
		{"leading, stopping (a handover, or Close): stop", Leading, held(reading{won: true, serving: true, stopping: true}), Stopped, stop, "stopping"},
		{"stopping wins over a lost lease: no step-down shipment", Leading, reading{won: true, serving: true, stopping: true, keysLost: keyGone}, Stopped, stop, "stopping"},
		{"following, stopping: stop", Following, held(reading{leader: other, inElection: true, stopping: true}), Stopped, stop, "stopping"},
		{"a follower never serves on a stray signal", Following, held(reading{leader: other, inElection: true, serving: true}), Following, stay, "b leads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.from, tc.read)
			if d.state != tc.want || d.act != tc.act || !strings.Contains(d.reason, tc.reason) {
				t.Errorf("decide(%s, %+v) = %s, action %d, %q; want %s, action %d, a reason with %q",
					tc.from, tc.read, d.state, d.act, d.reason, tc.want, tc.act, tc.reason)
			}
		})
	}
}

// TestOnlyLeadingShowsTheLeaderRole: the role the others see comes from the
// state alone; no state but Leading shows Leader.
func TestOnlyLeadingShowsTheLeaderRole(t *testing.T) {
	for s := NoEtcd; s <= Stopped; s++ {
		for _, known := range []bool{false, true} {
			role := s.role(known)
			want := Candidate
			switch {
			case s == Leading:
				want = Leader
			case known && (s == Following || s == CatchingUp):
				want = Follower
			}
			if role != want {
				t.Errorf("%s (leader known: %t) shows %s, want %s", s, known, role, want)
			}
			if strings.HasPrefix(s.String(), "state ") {
				t.Errorf("state %d has no name", s)
			}
		}
	}
}
