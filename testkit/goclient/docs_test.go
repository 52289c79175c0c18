package goclient_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The program the package documentation and docs/client.md show is
// Example's, which runs against a real server: the documents cannot drift
// from code that works.
func TestDocumentsShowTheExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Example" {
			body = string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		}
	}
	body, _, _ = strings.Cut(body, "\t// Unordered output:")
	body = strings.Trim(body, "\n")
	if strings.Count(body, "\n") < 10 {
		t.Fatalf("Example's body not found: %q", body)
	}

	doc, err := parser.ParseFile(token.NewFileSet(), "../../client/doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Doc.Text(), body) {
		t.Errorf("the package documentation (doc.go) does not show Example's program:\n%s", body)
	}
	md, err := os.ReadFile("../../docs/client.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), body) {
		t.Errorf("docs/client.md does not show Example's program:\n%s", body)
	}
}
