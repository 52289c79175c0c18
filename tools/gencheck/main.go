// Command gencheck is CI's check of the Go client's generated code:
// oapi-codegen v2.8.2, run once with the configuration of package
// client/internal/gen, must make of openapi/openapi.yaml exactly the
// committed client/internal/gen/api.gen.go (a change to the document without
// `go generate ./client/...` fails here), and every error schema of the
// served document must keep typed fields there: code a string type and
// status an integer type. A schema that loses its types (a const without a
// type, say) makes them interface{}, and the check fails to compile.
//
// It runs in CI only: the generator comes from the Go module proxy the first
// time, and `go test ./...` stays offline.
//
//	go run ./tools/gencheck
package main

import (
	"bytes"
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

func run() error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return err
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	genDir := filepath.Join(root, "client", "internal", "gen")
	dir, err := os.MkdirTemp("", "petstore-gencheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Generate in a copy of the configuration, leaving the committed file be.
	config, err := os.ReadFile(filepath.Join(genDir, "oapi-codegen.yaml"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "oapi-codegen.yaml"), config, 0o644); err != nil {
		return err
	}
	if err := goCommand(dir, "run", generator, "-config", "oapi-codegen.yaml", filepath.Join(root, "openapi", "openapi.yaml")); err != nil {
		return err
	}
	fresh, err := os.ReadFile(filepath.Join(dir, "api.gen.go"))
	if err != nil {
		return err
	}
	committed, err := os.ReadFile(filepath.Join(genDir, "api.gen.go"))
	if err != nil {
		return err
	}
	if !bytes.Equal(fresh, committed) {
		return fmt.Errorf("client/internal/gen/api.gen.go is not what openapi/openapi.yaml generates: run `go generate ./client/...` and commit the result")
	}

	// The typed check compiles inside package gen through an overlay:
	// nothing is written into the work tree.
	schemas, err := errorSchemas(openapi.JSON)
	if err != nil {
		return err
	}
	check := filepath.Join(dir, "typed_check.go")
	if err := os.WriteFile(check, []byte(typedCheck(schemas)), 0o644); err != nil {
		return err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(genDir, "zz_typed_check.go"): check}})
	if err != nil {
		return err
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return err
	}
	if err := goCommand(root, "vet", "-overlay", overlayFile, "./client/internal/gen"); err != nil {
		return err
	}
	fmt.Printf("gencheck: client/internal/gen/api.gen.go is current; code and status are typed in %s\n", strings.Join(schemas, ", "))
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
