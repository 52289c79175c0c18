package openapi_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"petstore/openapi"
)

// A served copy is the document with the server given as its only server
// and the service's base URL in its code samples, and nothing else changed,
// in YAML and in JSON alike.
func TestServedDocumentNamesItsBase(t *testing.T) {
	for _, c := range []struct{ server, base string }{
		{"/api/v1", "https://shop.example.org/api/v1"},
		{"https://shop.example.org/api/v1", "https://shop.example.org/api/v1"},
		{"/v1", "http://127.0.0.1:8090/v1"},
		{"http://[::1]:8090/v1", "http://[::1]:8090/v1"},
		{"/a%20b/v1", "https://petstore_app:8443/a%20b/v1"},
		{"/v1", "/v1"},
	} {
		want := decode(t, openapi.JSON)
		want["servers"] = []any{map[string]any{"url": c.server, "description": "This service"}}
		for _, sample := range codeSamples(t, want) {
			sample["source"] = strings.ReplaceAll(sample["source"].(string), "$BASE", c.base)
		}
		for form, doc := range map[string][]byte{"JSON": openapi.ServedJSON(c.server, c.base), "YAML": openapi.ServedYAML(c.server, c.base)} {
			var got map[string]any
			if form == "JSON" {
				got = decode(t, doc)
			} else {
				got = decodeYAML(t, doc)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s for server %s, base %s: not the document with its servers and samples naming them", form, c.server, c.base)
			}
		}
	}
}

// Every operation has a curl sample that calls the base URL, which the
// document as kept writes $BASE, and $BASE occurs nowhere else (the served
// copies replace every occurrence). Its servers name no host that a client
// would call: relative URLs, or a variable whose default is one.
func TestDocumentSamplesAndServers(t *testing.T) {
	doc := decode(t, openapi.JSON)
	samples := 0
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			list, _ := op.(map[string]any)["x-codeSamples"].([]any)
			if len(list) != 1 {
				t.Errorf("%s %s: %d code samples, want one curl", method, path, len(list))
				continue
			}
			source := list[0].(map[string]any)["source"].(string)
			if !strings.HasPrefix(source, "curl ") || !strings.Contains(source, `"$BASE`+path) && !strings.Contains(source, `"$BASE/pets/`) {
				t.Errorf("%s %s: sample %q does not call $BASE", method, path, source)
			}
			samples++
		}
	}
	if n := strings.Count(string(openapi.YAML), "$BASE"); n != samples {
		t.Errorf("$BASE occurs %d times, in %d samples: only samples may name it", n, samples)
	}

	for _, s := range doc["servers"].([]any) {
		server := s.(map[string]any)
		url := server["url"].(string)
		for name, v := range asMap(server["variables"]) {
			url = strings.ReplaceAll(url, "{"+name+"}", asMap(v)["default"].(string))
		}
		if !strings.HasPrefix(url, "/") {
			t.Errorf("server %v resolves to %q, a host clients would call", server, url)
		}
	}
}

func decode(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func decodeYAML(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, data)
}

func codeSamples(t *testing.T, doc map[string]any) []map[string]any {
	t.Helper()
	var samples []map[string]any
	for _, item := range doc["paths"].(map[string]any) {
		for _, op := range item.(map[string]any) {
			list, _ := op.(map[string]any)["x-codeSamples"].([]any)
			for _, s := range list {
				samples = append(samples, s.(map[string]any))
			}
		}
	}
	return samples
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
