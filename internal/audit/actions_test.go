package audit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"petstore/internal/audit"
)

// TestActionsListsEveryAction holds audit.Actions to the Action constants
// audit.go declares: a new action is counted from the start too.
func TestActionsListsEveryAction(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "audit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []audit.Action
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Action" {
				continue
			}
			for _, value := range v.Values {
				s, err := strconv.Unquote(value.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, audit.Action(s))
			}
		}
	}
	if len(declared) < 20 {
		t.Fatalf("read %d actions from audit.go: its declarations changed shape", len(declared))
	}
	listed := slices.Clone(audit.Actions)
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Errorf("audit.Actions %v, the constants %v", listed, declared)
	}
}
