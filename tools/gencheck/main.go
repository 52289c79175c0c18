// Command gencheck is CI's check that the document's Go consumers can use
// it: oapi-codegen v2.8.2 with its default configuration (models and
// client, nothing skipped, components that no path references pruned)
// generates from openapi/openapi.yaml a package that compiles, with its
// runtime module, in a fresh module of its own; and every error schema of
// the served document keeps typed fields there: code a string type and
// status an integer type. A schema that loses its types (a const without a
// type, say) makes them interface{}, and the check fails to compile.
//
// It runs in CI only: the generator and its runtime come from the Go
// module proxy the first time, and `go test ./...` stays offline. The
// command it runs is the one docs/api.md gives integrators.
//
//	go run ./tools/gencheck
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"petstore/openapi"
)

const generator = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gencheck:", err)
		os.Exit(1)
	}
}

// config is oapi-codegen's default configuration for a package gen:
// models and client.
const config = `package: gen
output: api.gen.go
generate:
  models: true
  client: true
`

func run() error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return err
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	dir, err := os.MkdirTemp("", "petstore-gencheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	for name, content := range map[string]string{
		"oapi-codegen.yaml": config,
		"go.mod":            "module gencheck\n\ngo 1.24\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := goCommand(dir, "run", generator, "-config", "oapi-codegen.yaml", filepath.Join(root, "openapi", "openapi.yaml")); err != nil {
		return err
	}
	schemas, err := errorSchemas(openapi.JSON)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "typed_check.go"), []byte(typedCheck(schemas)), 0o644); err != nil {
		return err
	}
	if err := goCommand(dir, "mod", "tidy"); err != nil {
		return err
	}
	if err := goCommand(dir, "vet", "."); err != nil {
		return err
	}
	fmt.Printf("gencheck: oapi-codegen's default configuration compiles the document; code and status are typed in %s\n", strings.Join(schemas, ", "))
	return nil
}

func goCommand(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// errorSchemas are Error and the schemas made of it (allOf Error).
func errorSchemas(doc []byte) ([]string, error) {
	var d struct {
		Components struct {
			Schemas map[string]struct {
				AllOf []struct {
					Ref string `json:"$ref"`
				} `json:"allOf"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if _, ok := d.Components.Schemas["Error"]; !ok {
		return nil, fmt.Errorf("the document has no Error schema")
	}
	names := []string{"Error"}
	for name, s := range d.Components.Schemas {
		if slices.ContainsFunc(s.AllOf, func(p struct {
			Ref string `json:"$ref"`
		}) bool {
			return p.Ref == "#/components/schemas/Error"
		}) {
			names = append(names, name)
		}
	}
	slices.Sort(names[1:])
	return names, nil
}

func typedCheck(schemas []string) string {
	var b strings.Builder
	b.WriteString("package gen\n\n")
	b.WriteString("// Each call compiles only if the field has a string (or integer) type.\n")
	b.WriteString("func typedString[T ~string](T)            {}\n")
	b.WriteString("func typedInt[T ~int | ~int32 | ~int64](T) {}\n\n")
	b.WriteString("func _() {\n")
	for _, s := range schemas {
		fmt.Fprintf(&b, "\ttypedString(%s{}.Code)\n\ttypedInt(%s{}.Status)\n", s, s)
	}
	b.WriteString("}\n")
	return b.String()
}
