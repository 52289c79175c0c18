// Package pets stores the store's animals: the rules every stored pet keeps
// (statuses, ids, bounds), createPet's insert, and the reads of listPets
// and getPet with the answers they keep.
//
// Pets are records of PocketBase's pets collection. The /v1 operations read
// and write them as plain rows, without building a core.Record (Row.Record
// builds one after a create, for PocketBase's after-create hooks, when
// somebody listens); the record hooks apply the same rules (Name,
// NewStatus) to pets saved in the dashboard.
package pets

import "strings"

// Collection is the PocketBase collection of pets.
const Collection = "pets"

// Pet is the spec's Pet. The record id is the pet's numeric id.
type Pet struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	CategoryID int64  `json:"categoryId"`
	Status     string `json:"status,omitempty"`
}

// NewPet is the spec's NewPet, checked against the rules below.
type NewPet struct {
	Name       string
	CategoryID int64
	Status     string // empty when omitted
}

// The rules of a stored pet. The collection's fields (migrations) enforce
// the same for records saved in the dashboard.
const (
	// IDPattern makes the record id the pet's public numeric id: 15 digits
	// without a leading zero always fit int64 and JSON's safe-integer range,
	// and a fixed length keeps text order equal to numeric order.
	IDPattern = "[1-9][0-9]{14}"
	// MaxID bounds the ids clients name, as the document's Pet.id does:
	// JSON's safe-integer range, 2^53-1, which every IDPattern id is in.
	MaxID = 1<<53 - 1
	// MaxCategoryID is the largest integer that JSON clients (and
	// PocketBase's float64 number fields) represent exactly: 2^53-1.
	MaxCategoryID = 1<<53 - 1
	// MaxNameLen bounds a name, in characters.
	MaxNameLen = 100
	// DefaultStatus is the status of a pet created without one.
	DefaultStatus = "available"
)

// Statuses are the values of the spec's PetStatus, in its order.
var Statuses = []string{"available", "pending", "sold"}

// Name is name as it is stored: without surrounding spaces.
func Name(name string) string { return strings.TrimSpace(name) }

// NewStatus is the status a new pet is stored with.
func NewStatus(status string) string {
	if status == "" {
		return DefaultStatus
	}
	return status
}
