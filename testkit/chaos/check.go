package chaos

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Window is the documented window of a hard loss of the leader without
// --cluster-sync: what it acknowledged in its last second may not have
// shipped. inFlight is how late such a 201 may reach its client after the
// fault: written by the leader before, carried by the network (and a
// follower that forwarded it) after.
const (
	Window   = time.Second
	inFlight = 250 * time.Millisecond
)

// stored is the final state: each pet's name by id, and how many pets bear
// each name.
type stored struct {
	names map[int64]string
	count map[string]int
}

// readAll lists every pet, page after page, from node n.
func readAll(w *workload, n *node) (stored, error) {
	s := stored{names: map[int64]string{}, count: map[string]int{}}
	path := fmt.Sprintf("/v1/pets?limit=%d", pageLimit)
	for path != "" {
		status, data, header := w.send(n, http.MethodGet, path, nil)
		if status != http.StatusOK {
			return s, fmt.Errorf("listPets on %s: %d %s", n.Name, status, data)
		}
		var page []struct {
			ID   int64
			Name string
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return s, err
		}
		for _, p := range page {
			s.names[p.ID] = p.Name
			s.count[p.Name]++
		}
		path = ""
		if link := header.Get("Link"); link != "" {
			next := strings.TrimSuffix(strings.TrimPrefix(strings.Split(link, ";")[0], "<"), ">")
			path = next[strings.Index(next, "/v1/"):]
		}
	}
	return s, nil
}

// unplanned finds the changes of leader no fault explains (a new term
// claimed first more than 10 s after every fault's heal): each is a fault
// of kind Unplanned, begun at the old term's last claim, when its leader
// was last seen leading. They are added to faults, in time order.
func unplanned(claims []claim, faults []*fault) []*fault {
	type span struct{ first, last claim }
	terms := map[int64]*span{}
	var order []int64
	for _, c := range claims {
		s := terms[c.term]
		if s == nil {
			terms[c.term] = &span{first: c, last: c}
			order = append(order, c.term)
			continue
		}
		if c.invoked.After(s.last.invoked) {
			s.last = c
		}
	}
	slices.Sort(order)
	all := slices.Clone(faults)
	for i := 1; i < len(order); i++ {
		old, next := terms[order[i-1]], terms[order[i]]
		explained := false
		for _, f := range faults {
			if !f.began.After(next.first.returns) && f.healed.Add(10*time.Second).After(old.last.invoked) {
				explained = true
			}
		}
		if !explained {
			at := old.last.returns
			all = append(all, &fault{kind: Unplanned, target: old.last.node, began: at, healed: at})
		}
	}
	slices.SortFunc(all, func(a, b *fault) int { return a.began.Compare(b.began) })
	return all
}

// check checks the history against the final state and fills r.
func check(r *Result, h *history, faults []*fault, final stored, sync bool) {
	faults = unplanned(h.claims, faults)
	acks := h.acknowledged()
	r.Acknowledged = len(acks)
	for _, c := range h.creates {
		r.Attempts += c.attempts
	}
	for _, rd := range h.reads {
		if rd.page {
			r.Pages++
		} else {
			r.Reads++
		}
	}

	// Every acknowledged create is stored, under its key, but those a hard
	// loss may take.
	excluded := map[int64]bool{}
	for _, c := range acks {
		if final.names[c.id] == c.key {
			continue
		}
		if f, before := lossWindow(c, faults, sync); f != nil {
			r.LostInWindow++
			r.WindowOffsets = append(r.WindowOffsets, before)
			excluded[c.id] = true
			continue
		}
		r.LostOutside++
		if r.LostOutside <= 5 {
			r.fail("LOST: pet %d (key %s) acknowledged through %s at %s (sent %s) is not stored at the end, outside the documented window%s%s",
				c.id, c.key, c.node, stamp(c.returned), stamp(c.sent), nearestFault(c.returned, faults), nextLoss(c.returned, faults, h.claims))
		}
	}
	if r.LostOutside > 5 {
		r.fail("LOST: … %d acknowledged creates lost outside the window in all", r.LostOutside)
	}

	// No Idempotency-Key created twice.
	for name, n := range final.count {
		if n > 1 {
			r.Duplicates++
			if r.Duplicates <= 5 {
				r.fail("DUPLICATE: Idempotency-Key %s created %d pets", name, n)
			}
		}
	}

	r.TwoWriters = twoWriters(h.claims, acks)
	for _, w := range r.TwoWriters {
		r.fail("TWO WRITERS: %s", w)
	}

	r.Porcupine, r.StaleReads = linearizable(h, acks, excluded, final)
	if r.Porcupine != porcupine.Ok {
		r.fail("PORCUPINE: the history of creates and reads is %s: %d pets stored at the end were read missing after their 201 (a stale read: reads not fenced?); the others are the lost creates above",
			r.Porcupine, len(r.StaleReads))
		for _, s := range r.StaleReads[:min(5, len(r.StaleReads))] {
			r.fail("STALE READ: %s", s)
		}
	}

	var times []time.Time
	for _, c := range acks {
		times = append(times, c.returned)
	}
	slices.SortFunc(times, time.Time.Compare)
	for i, f := range faults {
		var next *fault
		if i+1 < len(faults) {
			next = faults[i+1]
		}
		first, ok := h.firstAckAfter(f.began)
		f.firstAck = -1
		if ok {
			f.firstAck = first.Sub(f.began)
		} else {
			r.fail("UNAVAILABLE: no 201 after %s (%s) at %s, healed at %s", f.kind, f.target, stamp(f.began), stamp(f.healed))
		}
		f.gap = longestGap(times, f, next)
	}
	r.Faults = figures(faults)
}

// longestGap is the longest time without a 201 from the fault's start
// until the next fault, at most 10 s after its heal, or the history's end
// (times are the 201s', in order).
func longestGap(times []time.Time, f, next *fault) time.Duration {
	end := f.healed.Add(10 * time.Second)
	if next != nil && next.began.Before(end) {
		end = next.began
	}
	if n := len(times); n > 0 && times[n-1].Before(end) {
		end = times[n-1] // the history ends
	}
	i, _ := slices.BinarySearchFunc(times, f.began, time.Time.Compare)
	gap, last := time.Duration(0), f.began
	for _, t := range times[i:] {
		if t.After(end) {
			break
		}
		gap, last = max(gap, t.Sub(last)), t
	}
	return max(gap, end.Sub(last))
}

// lossWindow is the hard loss of the leader whose window holds c's commit,
// and how long before it c committed (negative: in flight after it); nil
// when none: without --cluster-sync alone.
func lossWindow(c *create, faults []*fault, sync bool) (*fault, time.Duration) {
	if sync {
		return nil, 0
	}
	committed := c.committed()
	for _, f := range faults {
		before := f.began.Sub(committed)
		if f.kind.hardLoss() && before <= Window && before >= -inFlight {
			return f, before
		}
	}
	return nil, 0
}

// committed is when c's create committed, as near as the history tells:
// the millisecond its id names (the writer names a pet by its create's
// millisecond, petIDsPerMilli) when that lies within its acknowledged
// attempt, else its 201's time. A leader paused after its fence's last
// check and before its 201 left acknowledges late what it committed before
// the pause: the window counts from the commit.
func (c *create) committed() time.Time {
	t := time.UnixMilli(c.id / petIDsPerMilli)
	if t.Before(c.sent.Truncate(time.Millisecond)) || t.After(c.returned) {
		return c.returned
	}
	return t
}

// nextLoss names the first hard loss of a leader after t, within 10 s, and
// since when that leader led by its claims: a create acknowledged more than
// Window before it is lost only if the leader had not shipped it since.
func nextLoss(t time.Time, faults []*fault, claims []claim) string {
	for _, f := range faults {
		if !f.kind.hardLoss() || f.began.Before(t) || f.began.Sub(t) > 10*time.Second {
			continue
		}
		// The target's claims before the fault, the last term's first.
		var term int64
		var since time.Time
		for _, c := range claims {
			if c.node != f.target || c.returns.After(f.began) {
				continue
			}
			if c.term > term {
				term, since = c.term, c.returns
			}
		}
		led := ""
		if term != 0 {
			led = fmt.Sprintf(", which led term %d from %s (%s before the loss)", term, stamp(since), f.began.Sub(since).Round(time.Millisecond))
		}
		return fmt.Sprintf("; %s before %s (%s) at %s%s", f.began.Sub(t).Round(time.Millisecond), f.kind, f.target, stamp(f.began), led)
	}
	return ""
}

func nearestFault(t time.Time, faults []*fault) string {
	var best *fault
	for _, f := range faults {
		if !f.began.After(t) {
			best = f
		}
	}
	if best == nil {
		return " (before any fault)"
	}
	return fmt.Sprintf(" (the last fault before it: %s on %s at %s, healed at %s)", best.kind, best.target, stamp(best.began), stamp(best.healed))
}

// twoWriters finds the times when a node claimed, on /readyz, to lead a
// term after another node had claimed a later term: two writers. A claim
// counts from its request's start to its answer's end, so that only a
// certain overlap is one.
func twoWriters(claims []claim, acks []*create) []string {
	type span struct {
		node                 string
		firstReturn, lastInv time.Time
	}
	terms := map[int64]*span{}
	for _, c := range claims {
		s := terms[c.term]
		if s == nil {
			s = &span{node: c.node, firstReturn: c.returns, lastInv: c.invoked}
			terms[c.term] = s
		}
		if c.returns.Before(s.firstReturn) {
			s.firstReturn = c.returns
		}
		if c.invoked.After(s.lastInv) {
			s.lastInv = c.invoked
		}
		if c.node != s.node {
			s.node += "+" + c.node // two nodes claiming one term
		}
	}
	var found []string
	for a, old := range terms {
		if strings.Contains(old.node, "+") {
			found = append(found, fmt.Sprintf("term %d claimed by two nodes, %s", a, old.node))
		}
		for b, newer := range terms {
			if b <= a || !old.lastInv.After(newer.firstReturn) {
				continue
			}
			acked := 0
			for _, c := range acks {
				if c.returned.After(newer.firstReturn) && c.returned.Before(old.lastInv) {
					acked++
				}
			}
			found = append(found, fmt.Sprintf("%s claimed term %d until %s, %s after %s claimed term %d (%d creates acknowledged meanwhile)",
				old.node, a, stamp(old.lastInv), old.lastInv.Sub(newer.firstReturn).Round(time.Millisecond), newer.node, b, acked))
		}
	}
	slices.Sort(found)
	return found
}

// petOp is an operation of the per-pet model: a create, or a read saying
// whether the pet was found.
type petOp struct {
	create bool
	id     int64
}

// petModel is Porcupine's model of one pet of the set: its state says
// whether its create took effect. A create makes it so; a read may find
// the pet or not while it is not (a create not acknowledged yet), and must
// find it once it is. The set is the product of its pets, so the history
// is checked pet by pet (Porcupine's partitions).
var petModel = porcupine.Model{
	Init: func() any { return false },
	Step: func(state, input, output any) (bool, any) {
		if input.(petOp).create {
			return true, true
		}
		return output.(bool) || !state.(bool), state
	},
	DescribeOperation: func(input, output any) string {
		if op := input.(petOp); op.create {
			return fmt.Sprintf("create %d", op.id)
		}
		return fmt.Sprintf("read %d: found %t", input.(petOp).id, output.(bool))
	},
}

// linearizable checks with Porcupine that every read (a getPet, or a page
// for each acknowledged pet in its range) after a create's 201 found the
// pet. The pets lost in the documented window are left out: their loss is
// counted apart. It returns the verdict and the stale reads.
//
// Its stale reads are those of pets stored at the end: a lost pet's reads
// after its loss are counted as its loss.
func linearizable(h *history, acks []*create, excluded map[int64]bool, final stored) (porcupine.CheckResult, []string) {
	byID := slices.Clone(acks)
	slices.SortFunc(byID, func(a, b *create) int { return cmp.Compare(a.id, b.id) })
	ops := map[int64][]porcupine.Operation{}
	creates := map[int64]*create{}
	for _, c := range byID {
		if excluded[c.id] {
			continue
		}
		creates[c.id] = c
		ops[c.id] = append(ops[c.id], porcupine.Operation{ClientId: c.client, Input: petOp{create: true, id: c.id},
			Call: c.invoked.UnixNano(), Output: true, Return: c.returned.UnixNano()})
	}
	add := func(rd read, id int64, found bool) {
		if creates[id] == nil {
			return
		}
		ops[id] = append(ops[id], porcupine.Operation{ClientId: rd.client, Input: petOp{id: id},
			Call: rd.invoked.UnixNano(), Output: found, Return: rd.returns.UnixNano()})
	}
	h.mu.Lock()
	reads := slices.Clone(h.reads)
	h.mu.Unlock()
	for _, rd := range reads {
		if !rd.page {
			add(rd, rd.id, rd.found)
			continue
		}
		seen := map[int64]bool{}
		for _, id := range rd.ids {
			seen[id] = true
		}
		from, _ := slices.BinarySearchFunc(byID, rd.id+1, func(c *create, id int64) int { return cmp.Compare(c.id, id) })
		for _, c := range byID[from:] {
			if rd.last != 0 && c.id > rd.last {
				break
			}
			if c.invoked.Before(rd.returns) {
				add(rd, c.id, seen[c.id])
			}
		}
	}
	verdict := porcupine.Ok
	var stale []string // the first read missing each pet found stale
	ids := make([]int64, 0, len(ops))
	for id := range ops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if porcupine.CheckOperations(petModel, ops[id]) {
			continue
		}
		verdict = porcupine.Illegal
		c := creates[id]
		if final.names[id] != c.key {
			continue
		}
		for _, rd := range reads {
			if rd.returns.After(c.returned) && rd.invoked.After(c.returned) && !found(rd, id) {
				what := "getPet"
				if rd.page {
					what = "a page"
				}
				stale = append(stale, fmt.Sprintf("pet %d acknowledged by %s at %s; %s through %s at %s–%s did not hold it",
					id, c.node, stamp(c.returned), what, rd.node, stamp(rd.invoked), stamp(rd.returns)))
				break
			}
		}
	}
	return verdict, stale
}

// found says whether read rd found pet id, when rd covers it.
func found(rd read, id int64) bool {
	if !rd.page {
		return rd.id != id || rd.found
	}
	if id <= rd.id || rd.last != 0 && id > rd.last {
		return true
	}
	return slices.Contains(rd.ids, id)
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }
