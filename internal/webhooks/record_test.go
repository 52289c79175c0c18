package webhooks_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/webhooks"
	"petstore/testkit/apptest"
)

// recordAccessors are the core.Record methods that name a field by a string.
var recordAccessors = []string{"Get", "GetRaw", "GetString", "GetBool", "GetInt", "GetFloat", "GetDateTime",
	"GetStringSlice", "UnmarshalJSONField", "Set", "SetRaw", "SetIfFieldExists", "Hide", "Unhide", "ExpandedOne", "ExpandedAll"}

// No Go file but the typed record (record.go) and the migrations names a
// webhook collection's field: a record's field by a literal (in
// internal/webhooks, any of them; elsewhere, one no other collection has),
// SQL on the collections (built from their names), or a collection by its
// name, as SQL outside the package would.
// The fields are the migrated schema's, so a new field is held too.
func TestOnlyTheRecordNamesTheFields(t *testing.T) {
	s := apptest.Start(t, "")
	webhookCollections := []string{webhooks.EndpointsCollection, webhooks.EventsCollection, webhooks.AttemptsCollection}
	fields := map[string]bool{}    // the webhook collections' fields
	elsewhere := map[string]bool{} // the other collections' fields
	collections, err := s.App.FindAllCollections()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range collections {
		for _, f := range c.Fields {
			if f.GetName() == core.FieldNameId {
				continue
			}
			if slices.Contains(webhookCollections, c.Name) {
				fields[f.GetName()] = true
			} else {
				elsewhere[f.GetName()] = true
			}
		}
	}
	if len(fields) < 20 {
		t.Fatalf("the webhook collections have %d fields: the schema was not read", len(fields))
	}

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "migrations" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == "internal/webhooks/record.go" {
			return nil
		}
		checked++
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		inPackage := filepath.Dir(rel) == "internal/webhooks"
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				v, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				for _, c := range webhookCollections {
					if strings.Contains(v, c) {
						t.Errorf("%s: %q names the collection %s", fset.Position(n.Pos()), v, c)
					}
				}
			case *ast.BinaryExpr:
				if n.Op != token.ADD {
					return true
				}
				for _, operand := range []ast.Expr{n.X, n.Y} {
					if name := identName(operand); slices.Contains([]string{"EndpointsCollection", "EventsCollection", "AttemptsCollection"}, name) {
						t.Errorf("%s: SQL on %s outside record.go", fset.Position(n.Pos()), name)
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || !slices.Contains(recordAccessors, sel.Sel.Name) {
					return true
				}
				for _, arg := range n.Args {
					if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, _ := strconv.Unquote(lit.Value); fields[v] && (inPackage || !elsewhere[v]) {
							t.Errorf("%s: %s(%q) reads a webhook record's field by name", fset.Position(n.Pos()), sel.Sel.Name, v)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files: the walk missed the module", checked)
	}
}

// identName is the name of an identifier or a selector's last part.
func identName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
