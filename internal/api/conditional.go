package api

import (
	"net/http"

	"petstore/internal/categories"
	"petstore/internal/dataversion"
	"petstore/internal/pets"
)

// Conditional reads (RFC 9110, 13.1.2): listPets, getPet and
// listCategories answer 200 with an ETag, and a request whose If-None-Match
// names it gets 304 Not Modified without a body. The tag comes from the data
// version the request works at (package dataversion) and the request's
// shape, never from the rows: the Epoch of the Watch that read the version
// (drawn at each start, so a restart, a restore or a cluster's failover,
// each a new process, never meets an older tag with the same meaning), the
// stamp of the tables the answer shows (which moves with each of their
// commits), and the parameters as parsed, so that queries asking the same
// (no limit and limit=20) share one tag. Computing one costs a few
// multiplications and the tag's string.

// The kinds of answer a tag names, each hashed first: two kinds never share
// a tag's meaning, even at equal stamps.
const (
	tagPetsPage     = 'm' // a page of listPets with a next one
	tagPetsLastPage = 'l' // the last page of listPets
	tagPet          = 'p' // getPet
	tagCategories   = 'c' // a page of listCategories
)

// entityTag is an FNV-1a hash (64 bits) of what names one answer, fed
// field by field.
type entityTag uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// newEntityTag starts the tag of an answer of kind at version v whose
// tables' stamp is stamp.
func newEntityTag(kind byte, v dataversion.Version, stamp int64) entityTag {
	return entityTag(fnvOffset).byte(kind).number(v.Epoch()).number(uint64(stamp))
}

func (t entityTag) byte(b byte) entityTag { return (t ^ entityTag(b)) * fnvPrime }

func (t entityTag) number(n uint64) entityTag {
	for range 8 {
		t = t.byte(byte(n))
		n >>= 8
	}
	return t
}

// text feeds s after its length, so that no two sequences of texts feed the
// same bytes.
func (t entityTag) text(s string) entityTag {
	t = t.number(uint64(len(s)))
	for i := range len(s) {
		t = t.byte(s[i])
	}
	return t
}

// String is the tag as the ETag header sends it: strong, 16 hex digits
// between quotes.
func (t entityTag) String() string {
	const digits = "0123456789abcdef"
	var b [18]byte
	b[0], b[17] = '"', '"'
	for i := 16; i > 0; i-- {
		b[i] = digits[t&0xf]
		t >>= 4
	}
	return string(b[:])
}

// petsPageTag is the tag of page, listPets' answer to q at v.
func petsPageTag(v dataversion.Version, q pets.Query, page pets.Page) string {
	kind := byte(tagPetsLastPage)
	if page.Next != "" {
		kind = tagPetsPage
	}
	return newEntityTag(kind, v, page.Stamp(v)).text(q.Status).text(q.After).number(uint64(q.Limit)).String()
}

// petTag is the tag of getPet's answer for the pet with id at v.
func petTag(v dataversion.Version, id string) string {
	return newEntityTag(tagPet, v, pets.PetStamp(v)).text(id).String()
}

// categoriesPageTag is the tag of listCategories' page of limit after the
// number after, at v.
func categoriesPageTag(v dataversion.Version, limit int, after int64) string {
	return newEntityTag(tagCategories, v, categories.Stamp(v)).number(uint64(after)).number(uint64(limit)).String()
}

// noneMatch tells whether the request's If-None-Match fails for the
// current answer's etag, so that the answer is 304: the field is "*" (the
// answer exists) or lists a tag equal to etag by the weak comparison
// (RFC 9110, 8.8.3.2: W/ is ignored). Several field lines make one list. A
// malformed field is ignored, as if not sent: the answer is the 200.
func noneMatch(h http.Header, etag string) bool {
	lines := h["If-None-Match"]
	matched := false
	for _, line := range lines {
		m, ok := listMatches(line, etag)
		if !ok {
			return false
		}
		matched = matched || m
	}
	return matched
}

// listMatches reads one field line of If-None-Match: "*", or a list of
// entity tags (empty elements allowed, RFC 9110, 5.6.1). ok is false when
// the line is neither.
func listMatches(line, etag string) (matched, ok bool) {
	if trimOWS(line) == "*" {
		return true, true
	}
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t' || c == ',':
			i++
			continue
		case c == 'W' && i+1 < len(line) && line[i+1] == '/':
			i += 2
		}
		if i >= len(line) || line[i] != '"' {
			return false, false
		}
		end := i + 1
		for end < len(line) && line[end] != '"' {
			if c := line[end]; c < 0x21 || c == 0x7f {
				return false, false
			}
			end++
		}
		if end == len(line) {
			return false, false
		}
		matched = matched || line[i:end+1] == etag
		i = end + 1
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i < len(line) && line[i] != ',' {
			return false, false
		}
	}
	return matched, true
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
