package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checks find what they look for in made-up histories: a check that
// cannot fail proves nothing. They run under -short, without processes.

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func acked(id int64, key string, invoked, returned int) *create {
	return &create{key: key, invoked: at(invoked), acked: true, sent: at(invoked), returned: at(returned), node: "n0", id: id, attempts: 1}
}

func TestPorcupineFindsAReadMissingAnAcknowledgedCreate(t *testing.T) {
	c := acked(5, "c0-0", 0, 10)
	final := stored{names: map[int64]string{5: "c0-0"}}
	for _, tc := range []struct {
		name  string
		reads []read
		want  porcupine.CheckResult
	}{
		{"found after", []read{{id: 5, invoked: at(20), returns: at(30), found: true}}, porcupine.Ok},
		{"missed while concurrent", []read{{id: 5, invoked: at(5), returns: at(15)}}, porcupine.Ok},
		{"missed after", []read{{node: "n2", id: 5, invoked: at(20), returns: at(30)}}, porcupine.Illegal},
		{"a page holding it", []read{{page: true, id: 0, ids: []int64{5}, invoked: at(20), returns: at(30)}}, porcupine.Ok},
		{"a last page missing it", []read{{page: true, id: 0, ids: []int64{7}, invoked: at(20), returns: at(30)}}, porcupine.Illegal},
		{"an empty last page", []read{{page: true, id: 0, invoked: at(20), returns: at(30)}}, porcupine.Illegal},
		{"a full page ending before it", []read{{page: true, id: 0, ids: []int64{2}, last: 2, invoked: at(20), returns: at(30)}}, porcupine.Ok},
		{"a page after its cursor", []read{{page: true, id: 5, invoked: at(20), returns: at(30)}}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history{creates: []*create{c}, reads: tc.reads}
			verdict, stale := linearizable(h, []*create{c}, nil, final)
			if verdict != tc.want {
				t.Fatalf("verdict %s, want %s", verdict, tc.want)
			}
			if (verdict == porcupine.Illegal) != (len(stale) == 1) {
				t.Errorf("stale reads %q", stale)
			}
		})
	}
	// A pet lost inside the window is left out.
	h := &history{creates: []*create{c}, reads: []read{{id: 5, invoked: at(20), returns: at(30)}}}
	if verdict, _ := linearizable(h, []*create{c}, map[int64]bool{5: true}, stored{}); verdict != porcupine.Ok {
		t.Errorf("a pet lost in the window: %s", verdict)
	}
}

func TestLossesAreExcusedInsideTheWindowAlone(t *testing.T) {
	kill := &fault{kind: KillLeader, began: at(2000), healed: at(4000)}
	deleted := &fault{kind: DeleteLeaderKey, began: at(6000), healed: at(6000)}
	paused := &fault{kind: PauseLeader, began: at(7015), healed: at(9000)}
	acks := []*create{
		acked(1, "in", 1000, 1500),        // 500 ms before the kill
		acked(2, "early", 500, 900),       // 1.1 s before it
		acked(3, "in flight", 1900, 2100), // 100 ms after it
		acked(4, "key", 5800, 5900),       // before a key's deletion
		acked(5, "kept", 100, 200),
		// committed 10 ms before a pause, its 201 sent at the resume
		{key: "late", invoked: at(7000), acked: true, sent: at(7000), returned: at(9000), node: "n0", id: at(7005).UnixMilli() * petIDsPerMilli, attempts: 1},
	}
	h := &history{creates: acks, answers: map[string]int{}}
	final := stored{names: map[int64]string{5: "kept"}, count: map[string]int{"kept": 1}}
	for _, sync := range []bool{false, true} {
		r := &Result{}
		check(r, h, []*fault{kill, deleted, paused}, final, sync)
		wantIn, wantOut := 3, 2
		if sync {
			wantIn, wantOut = 0, 5
		}
		if r.LostInWindow != wantIn || r.LostOutside != wantOut {
			t.Errorf("sync %t: lost %d inside, %d outside; want %d, %d", sync, r.LostInWindow, r.LostOutside, wantIn, wantOut)
		}
		if !strings.Contains(strings.Join(r.Problems, "\n"), "LOST: pet 2 (key early)") {
			t.Errorf("sync %t: problems %q", sync, r.Problems)
		}
	}
}

func TestDuplicatesAndUnavailabilityAreFound(t *testing.T) {
	h := &history{creates: []*create{acked(1, "a", 0, 10)}, answers: map[string]int{}}
	final := stored{names: map[int64]string{1: "a", 2: "a"}, count: map[string]int{"a": 2}}
	r := &Result{}
	check(r, h, []*fault{{kind: KillFollower, began: at(100), healed: at(200)}}, final, false)
	problems := strings.Join(r.Problems, "\n")
	if r.Duplicates != 1 || !strings.Contains(problems, "DUPLICATE: Idempotency-Key a created 2 pets") {
		t.Errorf("duplicates %d: %s", r.Duplicates, problems)
	}
	if !strings.Contains(problems, "UNAVAILABLE: no 201 after "+string(KillFollower)) {
		t.Errorf("no 201 after the fault, not found: %s", problems)
	}
}

func TestTwoWritersAreFound(t *testing.T) {
	claims := []claim{
		{node: "n0", term: 10, invoked: at(0), returns: at(5)},
		{node: "n1", term: 20, invoked: at(100), returns: at(105)},
		{node: "n1", term: 20, invoked: at(200), returns: at(205)},
	}
	if found := twoWriters(claims, nil); len(found) != 0 {
		t.Errorf("one writer at a time: %q", found)
	}
	// The old term claimed after the new one had been: two writers.
	claims = append(claims, claim{node: "n0", term: 10, invoked: at(150), returns: at(160)})
	found := twoWriters(claims, []*create{acked(1, "a", 100, 120)})
	if len(found) != 1 || !strings.Contains(found[0], "n0 claimed term 10") || !strings.Contains(found[0], "1 creates acknowledged") {
		t.Errorf("two writers: %q", found)
	}
	// Two nodes claiming one term.
	if found := twoWriters([]claim{{node: "n0", term: 1}, {node: "n1", term: 1}}, nil); len(found) != 1 {
		t.Errorf("one term, two nodes: %q", found)
	}
}

func TestAFailoverNoFaultMadeIsAHardLoss(t *testing.T) {
	claims := []claim{
		{node: "n0", term: 10, invoked: at(0), returns: at(5)},
		{node: "n0", term: 10, invoked: at(1000), returns: at(1005)},
		{node: "n1", term: 20, invoked: at(5000), returns: at(5005)},
		{node: "n2", term: 30, invoked: at(30000), returns: at(30005)},
	}
	faults := unplanned(claims, []*fault{{kind: KillLeader, began: at(20000), healed: at(22000)}})
	var kinds []string
	for _, f := range faults {
		kinds = append(kinds, string(f.kind))
	}
	if got := strings.Join(kinds, ", "); got != string(Unplanned)+", "+string(KillLeader) || !faults[0].began.Equal(at(1005)) {
		t.Errorf("faults %s (the first at %s)", got, faults[0].began)
	}
}

func TestTheNemesisMakesEveryKindButUnplanned(t *testing.T) {
	nm := newNemesis(nil, nil, Config{Seed: 3})
	made := map[Kind]int{}
	for range 2 * (len(Kinds) - 1) {
		made[nm.next()]++
	}
	for _, k := range Kinds {
		if want := 2; k != Unplanned && made[k] != want || k == Unplanned && made[k] != 0 {
			t.Errorf("%s made %d times in two rounds", k, made[k])
		}
	}
}
