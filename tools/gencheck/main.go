// Command gencheck is CI's check that the document's generators can use it,
// each with the command docs/api.md gives integrators.
//
// Go: oapi-codegen v2.8.2 with its default configuration (models and
// client, nothing skipped, components that no path references pruned)
// generates from openapi/openapi.yaml a package that compiles, with its
// runtime module, in a fresh module of its own; and every error schema of
// the served document keeps typed fields there: code a string type and
// status an integer type. A schema that loses its types (a const without a
// type, say) makes them interface{}, and the check fails to compile.
//
// TypeScript: @hey-api/openapi-ts (pinned in .ci/hey-api) generates from
// the document a real binary serves at /v1/openapi.json, as an integrator
// points it at a running service; its default baseUrl (the document's
// first server) must be the relative /v1, not the address the document was
// fetched from, and TypeScript compiles the SDK with a call of listPets.
//
// It runs in CI only, after `npm ci` in .ci/hey-api: the generators and the
// Go runtime come from the registries the first time, and `go test ./...`
// stays offline.
//
//	(cd .ci/hey-api && npm ci) && go run ./tools/gencheck
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"petstore/openapi"
	"petstore/testkit/realserver"
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
	if err := oapiCodegen(root); err != nil {
		return err
	}
	return heyAPI(root)
}

// oapiCodegen checks the Go generator's default configuration.
func oapiCodegen(root string) error {
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
	if err := command(dir, "go", "run", generator, "-config", "oapi-codegen.yaml", filepath.Join(root, "openapi", "openapi.yaml")); err != nil {
		return err
	}
	schemas, err := errorSchemas(openapi.JSON)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "typed_check.go"), []byte(typedCheck(schemas)), 0o644); err != nil {
		return err
	}
	if err := command(dir, "go", "mod", "tidy"); err != nil {
		return err
	}
	if err := command(dir, "go", "vet", "."); err != nil {
		return err
	}
	fmt.Printf("gencheck: oapi-codegen's default configuration compiles the document; code and status are typed in %s\n", strings.Join(schemas, ", "))
	return nil
}

// heyTSConfig compiles what @hey-api/openapi-ts writes (imports without
// extensions, for a bundler) and a call of it, strictly.
const heyTSConfig = `{
  "compilerOptions": {
    "target": "ES2022", "lib": ["ES2022", "DOM", "DOM.Iterable"], "module": "ESNext", "moduleResolution": "Bundler",
    "strict": true, "noEmit": true, "types": []
  },
  "include": ["petstore", "call.ts"]
}
`

// heyCall uses the generated SDK as its README does: the base URL set, a
// key, a typed page of pets.
const heyCall = `import { client } from "./petstore/client.gen";
import { listPets } from "./petstore/sdk.gen";

client.setConfig({ baseUrl: "http://127.0.0.1:8090/v1", auth: () => "key" });

export async function firstID(): Promise<number | undefined> {
  const { data } = await listPets({ query: { limit: 10 } });
  return data?.[0]?.id;
}
`

// generatedBaseURL is the default baseUrl in hey-api's client.gen.ts.
var generatedBaseURL = regexp.MustCompile(`createConfig<[^>]*>\(\{ baseUrl: '([^']*)' \}\)`)

// heyAPI checks the TypeScript generator on the document a real binary
// serves.
func heyAPI(root string) error {
	bin := filepath.Join(root, ".ci", "hey-api", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "openapi-ts")); err != nil {
		return fmt.Errorf("%w: run npm ci in .ci/hey-api first", err)
	}
	dir, err := os.MkdirTemp("", "petstore-gencheck-hey-api-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	server, err := realserver.Build(dir)
	if err != nil {
		return err
	}
	p, err := realserver.Start(server, filepath.Join(dir, "pb_data"))
	if err != nil {
		return err
	}
	defer p.Kill()

	if err := command(dir, filepath.Join(bin, "openapi-ts"), "-i", p.URL+"/v1/openapi.json", "-o", "petstore"); err != nil {
		return err
	}
	gen, err := os.ReadFile(filepath.Join(dir, "petstore", "client.gen.ts"))
	if err != nil {
		return err
	}
	m := generatedBaseURL.FindSubmatch(gen)
	switch {
	case m == nil:
		return fmt.Errorf("hey-api: client.gen.ts sets no default baseUrl:\n%s", gen)
	case string(m[1]) != "/v1":
		return fmt.Errorf("hey-api: the generated default baseUrl is %q, want /v1: the document's first server names a host (fetched from %s)", m[1], p.URL)
	}
	for name, content := range map[string]string{"tsconfig.json": heyTSConfig, "call.ts": heyCall} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := command(dir, filepath.Join(bin, "tsc"), "-p", "tsconfig.json"); err != nil {
		return err
	}
	fmt.Println("gencheck: @hey-api/openapi-ts generates from the served document a client whose default baseUrl is /v1, and it compiles")
	return nil
}

func command(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
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
