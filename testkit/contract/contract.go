// Package contract checks HTTP exchanges under /v1 against the OpenAPI
// document (openapi/openapi.yaml), for the tests: apptest's client and
// realserver's processes send every /v1 request of the test suite through
// Transport, so that each one is checked in the same way.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"petstore/openapi"
)

// Contract is the OpenAPI document, loaded and validated once per test binary.
type Contract struct {
	Doc    *openapi3.T
	router routers.Router
	// outside answers requests that match no operation: unknown paths and
	// other methods on known ones (info.description says how).
	outside *openapi3.Operation
}

var load = sync.OnceValues(func() (*Contract, error) {
	// A YAML body is text to the document (getOpenAPIDocumentYAML's schema
	// is a string, as generators and mock servers read it), not the object
	// kin-openapi would decode it into.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.FileBodyDecoder)
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	// The relative server "/v1" matches any host, so the test servers'
	// random ports route like production.
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	outside := openapi3.NewOperation()
	outside.Responses = openapi3.NewResponses()
	notFound, err := unknownPathResponse(doc)
	if err != nil {
		return nil, err
	}
	outside.Responses.Set(fmt.Sprint(http.StatusNotFound), notFound)
	notAllowed, err := methodNotAllowedResponse(doc)
	if err != nil {
		return nil, err
	}
	outside.Responses.Set(fmt.Sprint(http.StatusMethodNotAllowed), notAllowed)
	for status, name := range map[int]string{
		http.StatusRequestEntityTooLarge: "PayloadTooLarge",
		http.StatusTooManyRequests:       "TooManyRequests",
		http.StatusInternalServerError:   "InternalError",
	} {
		ref := doc.Components.Responses[name]
		if ref == nil {
			return nil, fmt.Errorf("components.responses.%s is missing", name)
		}
		outside.Responses.Set(fmt.Sprint(status), ref)
	}
	return &Contract{Doc: doc, router: router, outside: outside}, nil
})

// unknownPathResponse is the answer to a path outside the document: a
// NotFoundError, with the rate-limit headers when the request was counted.
// The document cannot name it as a response (no operation answers it, and an
// unreferenced components.responses entry is what linters rightly flag);
// info.description's Errors section describes it.
func unknownPathResponse(doc *openapi3.T) (*openapi3.ResponseRef, error) {
	schema := doc.Components.Schemas["NotFoundError"]
	if schema == nil {
		return nil, errors.New("components.schemas.NotFoundError is missing")
	}
	resp := openapi3.NewResponse().WithDescription("No such path under /v1.").WithJSONSchemaRef(schema)
	resp.Headers = openapi3.Headers{}
	for _, name := range []string{"Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
		h := doc.Components.Headers[name]
		if h == nil {
			return nil, fmt.Errorf("components.headers.%s is missing", name)
		}
		optional := *h.Value
		optional.Required = false
		resp.Headers[name] = &openapi3.HeaderRef{Value: &optional}
	}
	return &openapi3.ResponseRef{Value: resp}, nil
}

// methodNotAllowedResponse is the answer to a method a path does not have:
// an Error with code method_not_allowed, Allow listing the path's methods,
// and the headers of every counted answer. No operation can name it (each
// is one method), and the document's components hold only what operations
// use; info.description's Errors section describes it.
func methodNotAllowedResponse(doc *openapi3.T) (*openapi3.ResponseRef, error) {
	base := doc.Components.Schemas["Error"]
	if base == nil {
		return nil, errors.New("components.schemas.Error is missing")
	}
	narrowed := openapi3.NewObjectSchema()
	narrowed.Required = []string{"code", "status"}
	narrowed.Properties = openapi3.Schemas{
		"code":   openapi3.NewStringSchema().WithEnum("method_not_allowed").NewRef(),
		"status": openapi3.NewIntegerSchema().WithMin(http.StatusMethodNotAllowed).WithMax(http.StatusMethodNotAllowed).NewRef(),
	}
	schema := &openapi3.Schema{AllOf: openapi3.SchemaRefs{base, narrowed.NewRef()}}
	resp := openapi3.NewResponse().WithDescription("The path exists but not with this method.").WithJSONSchema(schema)
	resp.Headers = openapi3.Headers{"Allow": &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
		Required: true,
		Schema:   openapi3.NewStringSchema().WithPattern(`^[A-Z]+(, [A-Z]+)*$`).NewRef(),
	}}}}
	for _, name := range []string{"Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
		h := doc.Components.Headers[name]
		if h == nil {
			return nil, fmt.Errorf("components.headers.%s is missing", name)
		}
		resp.Headers[name] = h
	}
	return &openapi3.ResponseRef{Value: resp}, nil
}

// Load returns the OpenAPI document, failing t if it does not load or is
// not a valid OpenAPI 3.1 document.
func Load(t testing.TB) *Contract {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("openapi/openapi.yaml: %v", err)
	}
	return c
}

// Default returns the OpenAPI document, loaded and validated once, for a
// program that checks exchanges outside a test (tools/prismcheck).
func Default() (*Contract, error) { return load() }

// Covers reports whether the document speaks for req: any request under /v1
// except OPTIONS, which PocketBase's CORS middleware answers before any /v1
// middleware.
func Covers(req *http.Request) bool {
	return (req.URL.Path == "/v1" || strings.HasPrefix(req.URL.Path, "/v1/")) && req.Method != http.MethodOptions
}

// Check returns what is wrong with an exchange the document covers, or nil;
// body is the whole response body. It holds the exchange to this:
//
//   - every response must be one the document gives for its request: a
//     documented status with its headers and body (unknown paths and other
//     methods: the answers of components.responses listed in outside);
//   - a request the document does not allow (no such operation, parameters
//     out of bounds, no bearer credential) must be refused with a 4xx.
//
// Request bodies are not checked: the service trims names before checking
// them, so it accepts more than NewPet's schema, and tests send bad bodies on
// purpose; the answer to them is checked like any other.
//
// Exchanges the document does not cover (see Covers) pass.
func (c *Contract) Check(req *http.Request, resp *http.Response, body []byte) error {
	if !Covers(req) {
		return nil
	}
	if problem := c.check(req, resp, body); problem != "" {
		return fmt.Errorf("OpenAPI contract: %s %s -> %d: %s\nresponse headers: %v\nresponse body: %.500s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, problem, resp.Header, body)
	}
	return nil
}

// check returns what is wrong with the exchange, or "".
func (c *Contract) check(req *http.Request, resp *http.Response, body []byte) string {
	ctx := context.Background()
	// The request as the document sees it: HEAD is GET without a body (RFC
	// 9110), and the body is not checked (see Check).
	r := req.Clone(ctx)
	r.Body, r.ContentLength = http.NoBody, 0
	if r.Method == http.MethodHead {
		r.Method = http.MethodGet
	}

	in := &openapi3filter.RequestValidationInput{
		Request: r,
		Options: &openapi3filter.Options{
			ExcludeRequestBody:  true,
			SkipSettingDefaults: true,
			AuthenticationFunc:  bearerCredential,
		},
	}
	var refused error
	route, pathParams, err := c.router.FindRoute(r)
	switch {
	case errors.Is(err, routers.ErrPathNotFound), errors.Is(err, routers.ErrMethodNotAllowed):
		refused = err
		route = &routers.Route{Spec: c.Doc, Path: r.URL.Path, Method: r.Method, Operation: c.outside}
	case err != nil:
		return "routing: " + err.Error()
	default:
		in.Route, in.PathParams = route, pathParams
		refused = openapi3filter.ValidateRequest(ctx, in)
	}
	in.Route = route

	if refused != nil && (resp.StatusCode < 400 || resp.StatusCode > 499) {
		return fmt.Sprintf("the document does not allow this request (%v), but it was not refused", refused)
	}
	if resp.StatusCode == http.StatusNotModified {
		return notModifiedProblem(route.Operation, resp, body)
	}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			ExcludeResponseBody:   req.Method == http.MethodHead,
		},
	})
	if err != nil {
		// The schema follows; the body is printed anyway.
		reason, _, _ := strings.Cut(err.Error(), "\nSchema:")
		return "the response does not match the document: " + reason
	}
	return ""
}

// notModifiedProblem checks a 304, which kin-openapi's validator passes
// whatever it is: the operation must declare it, and the answer must carry
// every header the declaration requires, and no body.
func notModifiedProblem(op *openapi3.Operation, resp *http.Response, body []byte) string {
	declared := op.Responses.Status(http.StatusNotModified)
	if declared == nil || declared.Value == nil {
		return "the operation declares no 304"
	}
	if len(body) != 0 {
		return "a 304 with a body"
	}
	var missing []string
	for name, h := range declared.Value.Headers {
		if h.Value != nil && h.Value.Required && resp.Header.Get(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) != 0 {
		slices.Sort(missing)
		return "the 304 lacks the required headers " + strings.Join(missing, ", ")
	}
	return ""
}

// bearerCredential accepts a request whose one Authorization header carries
// a bearer token: the document cannot know whether the key is valid.
func bearerCredential(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if s := in.SecurityScheme; s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return in.NewError(fmt.Errorf("unexpected security scheme %q", in.SecuritySchemeName))
	}
	values := in.RequestValidationInput.Request.Header.Values("Authorization")
	if len(values) != 1 {
		return in.NewError(fmt.Errorf("%d Authorization headers", len(values)))
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return in.NewError(errors.New("no bearer token"))
	}
	return nil
}

// CheckEvent returns what is wrong with a webhook delivery's body, or nil:
// its type must be one of the document's webhooks, and the body must match
// that webhook's request body schema.
func (c *Contract) CheckEvent(body []byte) error {
	var event struct{ Type string }
	if err := json.Unmarshal(body, &event); err != nil {
		return fmt.Errorf("OpenAPI contract: webhook body is not JSON: %w", err)
	}
	hook := c.Doc.Webhooks[event.Type]
	if hook == nil || hook.Post == nil || hook.Post.RequestBody == nil {
		return fmt.Errorf("OpenAPI contract: no webhook %q in the document", event.Type)
	}
	media := hook.Post.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return fmt.Errorf("OpenAPI contract: webhook %q has no JSON body", event.Type)
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return err
	}
	if err := media.Schema.Value.VisitJSON(value); err != nil {
		reason, _, _ := strings.Cut(err.Error(), "\nSchema:")
		return fmt.Errorf("OpenAPI contract: webhook %q body %.300s does not match the document: %s", event.Type, body, reason)
	}
	return nil
}
