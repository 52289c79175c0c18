package apikeys

import (
	"slices"
	"strings"
)

// Scope is something a key may do. Its name is "resource:action": the
// resource as /v1 names it, in the plural (pets; later categories, orders),
// and the action, read (the operations that only read it: GET and HEAD) or
// write (those that add, change or remove it). Neither implies the other: a
// key may write without reading.
type Scope string

// The scopes there are, in the order they are listed.
const (
	ScopePetsRead  Scope = "pets:read"  // listPets, getPet
	ScopePetsWrite Scope = "pets:write" // createPet
)

// Scopes are the scopes there are. A key is given all of them unless it
// says otherwise.
var Scopes = []Scope{ScopePetsRead, ScopePetsWrite}

// ParseScopes reads scope names, as staff and the command line give them,
// into a key's scopes: known names only, at least one, in Scopes' order,
// each once. The error lists the known ones.
func ParseScopes(names []string) ([]Scope, error) {
	scopes := make([]Scope, len(names))
	for i, name := range names {
		scopes[i] = Scope(strings.TrimSpace(name))
	}
	return normalizeScopes(scopes)
}

// normalizeScopes is scopes in Scopes' order, each once, or why a key
// cannot have them.
func normalizeScopes(scopes []Scope) ([]Scope, error) {
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return nil, badSettings(ScopesField, "unknown scope %q: the scopes are %s", s, ScopeList(Scopes))
		}
	}
	var normal []Scope
	for _, s := range Scopes {
		if slices.Contains(scopes, s) {
			normal = append(normal, s)
		}
	}
	if len(normal) == 0 {
		return nil, badSettings(ScopesField, "a key needs at least one scope: %s", listOf(ScopeNames(Scopes), "or"))
	}
	return normal, nil
}

// ScopeList names scopes for a message: "pets:read and pets:write".
func ScopeList(scopes []Scope) string { return listOf(ScopeNames(scopes), "and") }

// listOf joins names for a message: "a", "a or b", "a, b or c".
func listOf(names []string, conjunction string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conjunction + " " + names[len(names)-1]
}

// ScopeNames are scopes as strings, for JSON and the audit trail.
func ScopeNames(scopes []Scope) []string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return names
}
