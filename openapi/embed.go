// Package openapi holds the contract of /v1: an OpenAPI 3.1 document kept as
// YAML (openapi.yaml) and embedded in the binary, with its JSON form, and the
// copies a service serves, whose code samples name its own address.
package openapi

import (
	"bytes"
	_ "embed"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// YAML is the document as written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON is the same document as JSON, converted once at start-up.
var JSON = mustJSON(YAML)

func mustJSON(doc []byte) []byte {
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		panic("openapi: openapi.yaml is not valid YAML: " + err.Error()) // caught by the package's tests
	}
	return data
}

// ServedYAML is the document a service serves, as written but for two
// things: server is its one server, and base, its base URL (the address of
// /v1), is in its code samples. Both must hold only characters that need no
// quoting in YAML, JSON or a shell's double quotes: letters, digits and
// -._~:/%[] (a URL as internal/api makes one).
func ServedYAML(server, base string) []byte { return servedYAML.with(server, base) }

// ServedJSON is ServedYAML as JSON.
func ServedJSON(server, base string) []byte { return servedJSON.with(server, base) }

// template is a served document cut at each place that names the server or
// the base URL; names says which of the two goes into each cut.
type template struct {
	parts [][]byte
	names []bool // names[i] is true where the server goes after parts[i]
}

func (t template) with(server, base string) []byte {
	var b bytes.Buffer
	for i, part := range t.parts {
		b.Write(part)
		switch {
		case i == len(t.names):
		case t.names[i]:
			b.WriteString(server)
		default:
			b.WriteString(base)
		}
	}
	return b.Bytes()
}

// serverMarker and baseMarker stand for the server and the base URL while
// the templates are made; they occur nowhere in the document.
const (
	serverMarker = "petstore-served-server"
	baseMarker   = "petstore-served-base-url"
)

// sampleBase stands for the base URL in the code samples as written.
const sampleBase = "$BASE"

// servedServers replaces the document's servers: a client of a service
// calls that service, not the addresses the repository's copy describes.
const servedServers = "servers:\n  - url: " + serverMarker + "\n    description: This service\n"

var servedYAML, servedJSON = mustServed(YAML)

// mustServed cuts the served documents once, at start-up: the servers block
// is the top-level key "servers" and the lines indented under it.
func mustServed(doc []byte) (yamlDoc, jsonDoc template) {
	text := string(doc)
	if strings.Contains(text, serverMarker) || strings.Contains(text, baseMarker) {
		panic("openapi: openapi.yaml contains " + serverMarker + " or " + baseMarker)
	}
	start := strings.Index(text, "\nservers:\n")
	if start < 0 {
		panic("openapi: openapi.yaml has no top-level servers")
	}
	start++
	end := start + len("servers:\n")
	for end < len(text) && (text[end] == ' ' || text[end] == '-') {
		eol := strings.IndexByte(text[end:], '\n')
		if eol < 0 {
			panic("openapi: openapi.yaml ends inside its servers")
		}
		end += eol + 1
	}
	served := text[:start] + servedServers + text[end:]
	served = strings.ReplaceAll(served, sampleBase, baseMarker)

	asJSON, err := yaml.YAMLToJSON([]byte(served))
	if err != nil {
		panic("openapi: the served document is not valid YAML: " + err.Error())
	}
	return cut([]byte(served)), cut(asJSON)
}

// markers finds either marker.
var markers = regexp.MustCompile(serverMarker + "|" + baseMarker)

// cut splits a document at each marker, in order.
func cut(doc []byte) template {
	var t template
	last := 0
	for _, m := range markers.FindAllIndex(doc, -1) {
		t.parts = append(t.parts, doc[last:m[0]])
		t.names = append(t.names, string(doc[m[0]:m[1]]) == serverMarker)
		last = m[1]
	}
	t.parts = append(t.parts, doc[last:])
	return t
}
