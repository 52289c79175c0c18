package pets

import "github.com/pocketbase/pocketbase/core"

// Queued is how many writes wait for the writer, for tests that hold it.
func (w *Writer) Queued() int { return len(w.queue) }

// MaxBatch is how many creates one transaction holds at most.
const MaxBatch = maxBatch

// StartWriterGathering is StartWriter with another gathering time.
var StartWriterGathering = startWriter

// CreatesHeard reports whether the pets /v1 creates on app reach anybody:
// whether the service builds records for them and fires the after-create
// hooks.
func CreatesHeard(app core.App) (bool, error) {
	events, err := NewEvents(app, app.Logger())
	if err != nil {
		return false, err
	}
	return events.heard(), nil
}
