// Package openapi holds the contract of /v1: an OpenAPI 3.1 document kept as
// YAML (openapi.yaml) and embedded in the binary, with its JSON form.
package openapi

import (
	_ "embed"

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
