package openapi_test

import (
	"slices"
	"testing"

	"petstore/internal/api"
	"petstore/testkit/contract"
)

// The document loads and is a valid OpenAPI 3.1 document for kin-openapi,
// the validator of the test harness (.ci/run lints it with Redocly too), and
// has the spec's operations.
func TestDocumentIsValid(t *testing.T) {
	doc := contract.Load(t).Doc
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0" {
		t.Errorf("openapi %q, version %q; want 3.1.0 and 1.0.0", doc.OpenAPI, doc.Info.Version)
	}
	ops := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[method+" "+path+" "+op.OperationID] = op.Deprecated
		}
	}
	for op, deprecated := range map[string]bool{
		"GET /pets listPets": false, "POST /pets createPet": false, "GET /pets/{petId} getPet": true,
		"GET /categories listCategories": false,
	} {
		if got, ok := ops[op]; !ok || got != deprecated {
			t.Errorf("%s: present %v, deprecated %v; want present, deprecated %v", op, ok, got, deprecated)
		}
	}
}

// Error.code lists exactly the service's catalogue.
func TestErrorCodesAreTheCatalogue(t *testing.T) {
	var codes []string
	for _, v := range contract.Load(t).Doc.Components.Schemas["Error"].Value.Properties["code"].Value.Enum {
		codes = append(codes, v.(string))
	}
	if !slices.Equal(codes, api.Codes) {
		t.Fatalf("Error.code enum %v, catalogue %v", codes, api.Codes)
	}
}

// notLeader is the answer of a cluster's follower that cannot forward a
// request: its gate answers before any operation, with none of an
// operation's own headers.
const notLeader = "#/components/responses/NotLeader"

// Every response of the deprecated getPet, errors included, declares the
// deprecation headers the service sends on all of them (internal/api/deprecation.go),
// so that generated clients see them. The contract checks of the tests cannot
// notice a missing declaration: undeclared headers pass.
func TestGetPetResponsesDeclareDeprecation(t *testing.T) {
	op := contract.Load(t).Doc.Paths.Value("/pets/{petId}").Get
	for status, resp := range op.Responses.Map() {
		if resp.Ref == notLeader {
			continue
		}
		for name, component := range map[string]string{
			"Deprecation": "Deprecation", "Sunset": "Sunset", "Link": "Link-successor-version",
		} {
			h := resp.Value.Headers[name]
			if h == nil || h.Ref != "#/components/headers/"+component || !h.Value.Required {
				t.Errorf("getPet %s: header %s is not a required $ref to components.headers.%s", status, name, component)
			}
		}
	}
}

// Every operation has a stability level (x-stability), stable or beta;
// listCategories and getUsage alone are beta, shows a Beta badge on the reference page
// (Redoc's x-badges), and every response of it declares the API-Stability
// header the service sends on all of them (internal/api/stability.go), as
// getPet's declare its deprecation.
func TestEveryOperationHasAStability(t *testing.T) {
	for path, item := range contract.Load(t).Doc.Paths.Map() {
		for method, op := range item.Operations() {
			level := op.Extensions["x-stability"]
			want := "stable"
			if op.OperationID == "listCategories" || op.OperationID == "getUsage" {
				want = "beta"
			}
			if level != want {
				t.Errorf("%s %s: x-stability %v, want %s", method, path, level, want)
			}
			badges, _ := op.Extensions["x-badges"].([]any)
			if beta := len(badges) == 1 && badges[0].(map[string]any)["name"] == "Beta"; beta != (want == "beta") {
				t.Errorf("%s %s: x-badges %v, want a Beta badge exactly when beta", method, path, badges)
			}
			if want != "beta" {
				continue
			}
			for status, resp := range op.Responses.Map() {
				if resp.Ref == notLeader {
					continue
				}
				h := resp.Value.Headers["API-Stability"]
				if h == nil || h.Ref != "#/components/headers/API-Stability" || !h.Value.Required {
					t.Errorf("%s %s %s: API-Stability is not a required $ref to components.headers.API-Stability", method, path, status)
				}
			}
		}
	}
}

// Every answer of every operation declares Request-Id, which the service
// sends on all of them (internal/requestid), and lists no 405: a 405
// answers a method its path does not have, never an operation's own.
func TestEveryResponseDeclaresRequestIDAndNo405(t *testing.T) {
	for path, item := range contract.Load(t).Doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				if status == "405" {
					t.Errorf("%s %s lists 405", method, path)
				}
				h := resp.Value.Headers["Request-Id"]
				if h == nil || h.Ref != "#/components/headers/Request-Id" || !h.Value.Required {
					t.Errorf("%s %s %s: Request-Id is not a required $ref to components.headers.Request-Id", method, path, status)
				}
			}
		}
	}
}

// The tagged reads (internal/api/conditional.go) declare what they send and
// read: If-None-Match, an ETag and Cache-Control on their 200 and their 304,
// and the rate-limit headers on the 304, which a client reads from it as
// from a 200. kin-openapi never checks a 304 (its validator passes them
// all), so the contract checks of the tests check these (testkit/contract).
func TestTaggedReadsDeclareConditionalRequests(t *testing.T) {
	doc := contract.Load(t).Doc
	for _, path := range []string{"/pets", "/pets/{petId}", "/categories"} {
		op := doc.Paths.Value(path).Get
		if p := op.Parameters.GetByInAndName("header", "If-None-Match"); p == nil {
			t.Errorf("GET %s does not declare If-None-Match", path)
		}
		for _, status := range []int{200, 304} {
			resp := op.Responses.Status(status)
			if resp == nil {
				t.Errorf("GET %s does not declare %d", path, status)
				continue
			}
			for name, component := range map[string]string{
				"ETag": "ETag", "Cache-Control": "Cache-Control-revalidate", "X-RateLimit-Limit": "X-RateLimit-Limit",
				"X-RateLimit-Remaining": "X-RateLimit-Remaining", "X-RateLimit-Reset": "X-RateLimit-Reset",
			} {
				h := resp.Value.Headers[name]
				if h == nil || h.Ref != "#/components/headers/"+component || !h.Value.Required {
					t.Errorf("GET %s %d: header %s is not a required $ref to components.headers.%s", path, status, name, component)
				}
			}
			if status == 304 && len(resp.Value.Content) != 0 {
				t.Errorf("GET %s 304 declares a body", path)
			}
		}
	}
}
