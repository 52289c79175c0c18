package pets

// Queued is how many writes wait for the writer, for tests that hold it.
func (w *Writer) Queued() int { return len(w.queue) }

// MaxBatch is how many creates one transaction holds at most.
const MaxBatch = maxBatch

// StartWriterGathering is StartWriter with another gathering time.
var StartWriterGathering = startWriter
