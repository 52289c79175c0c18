// Package openapi holds the contract of /v1: an OpenAPI 3.1 document kept as
// YAML (openapi.yaml) and embedded in the binary, with its JSON form, and the
// copies a service serves, which name its own address.
package openapi

import (
	"bytes"
	_ "embed"
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

// ServedYAML is the document a service serves at base, its base URL (the
// address of /v1): as written, with base as its one server and in its code
// samples. base must hold only characters that need no quoting in YAML, JSON
// or a shell's double quotes: letters, digits and -._~:/%[] (a URL as
// internal/api makes one).
func ServedYAML(base string) []byte { return servedYAML.with(base) }

// ServedJSON is ServedYAML as JSON.
func ServedJSON(base string) []byte { return servedJSON.with(base) }

// template is a served document cut at each place that names the base URL.
type template [][]byte

func (t template) with(base string) []byte { return bytes.Join(t, []byte(base)) }

// baseMarker stands for the base URL while the templates are made; it occurs
// nowhere in the document.
const baseMarker = "petstore-served-base-url"

// sampleBase stands for the base URL in the code samples as written.
const sampleBase = "$BASE"

// servedServers replaces the document's servers: a client of a service
// calls that service, not the addresses the repository's copy describes.
const servedServers = "servers:\n  - url: " + baseMarker + "\n    description: This service\n"

var servedYAML, servedJSON = mustServed(YAML)

// mustServed cuts the served documents once, at start-up: the servers block
// is the top-level key "servers" and the lines indented under it.
func mustServed(doc []byte) (yamlDoc, jsonDoc template) {
	text := string(doc)
	if strings.Contains(text, baseMarker) {
		panic("openapi: openapi.yaml contains " + baseMarker)
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
	return bytes.Split([]byte(served), []byte(baseMarker)), bytes.Split(asJSON, []byte(baseMarker))
}
