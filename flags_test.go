package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/cmd"
	"github.com/spf13/pflag"

	"petstore/internal/banner"
	"petstore/internal/envflag"
	"petstore/internal/options"
)

// readmeFlag is a flag's name in the README's Flags table, and readmeEnv a
// variable's name, whole or as a PREFIX_* that stands for several.
var (
	readmeFlag = regexp.MustCompile("`--([a-zA-Z0-9-]+)")
	readmeEnv  = regexp.MustCompile("`(PETSTORE_[A-Z0-9_]+)(\\*?)`")
)

// TestREADMEListsEveryFlag holds the README's Flags table to the command
// line: a row for every flag petstore binds, with its variable, and no row
// for a flag that neither petstore nor PocketBase has.
func TestREADMEListsEveryFlag(t *testing.T) {
	app, _, err := newApp(nil)
	if err != nil {
		t.Fatal(err)
	}
	serve := cmd.NewServeCommand(app, false)
	root := app.RootCmd
	ours := pflag.NewFlagSet("petstore", pflag.ContinueOnError)
	serveOurs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	options.Bind(ours, serveOurs, banner.Invocation{})
	root.PersistentFlags().AddFlagSet(ours)
	serve.PersistentFlags().AddFlagSet(serveOurs)

	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	envOf := map[string][]string{} // a listed flag: the variables its row names
	for _, row := range flagsTable(t, string(readme)) {
		cells := strings.Split(row, "|")
		if len(cells) < 4 {
			t.Fatalf("README's Flags table has a row of %d cells: %s", len(cells), row)
		}
		for _, m := range readmeFlag.FindAllStringSubmatch(cells[1], -1) {
			envOf[m[1]] = nil
			for _, e := range readmeEnv.FindAllStringSubmatch(cells[2], -1) {
				envOf[m[1]] = append(envOf[m[1]], e[1]+e[2])
			}
		}
	}

	for _, fs := range []*pflag.FlagSet{ours, serveOurs} {
		fs.VisitAll(func(f *pflag.Flag) {
			vars, listed := envOf[f.Name]
			if !listed {
				t.Errorf("README's Flags table has no row for --%s", f.Name)
				return
			}
			if !namesVariable(vars, envflag.Name(f.Name)) {
				t.Errorf("README's row for --%s does not name its variable %s (it names %v)", f.Name, envflag.Name(f.Name), vars)
			}
		})
	}
	for name := range envOf {
		if root.PersistentFlags().Lookup(name) == nil && serve.PersistentFlags().Lookup(name) == nil && serve.Flags().Lookup(name) == nil {
			t.Errorf("README's Flags table lists --%s, which no command has", name)
		}
	}
}

// flagsTable is the rows of the README's Flags section that name a flag.
func flagsTable(t *testing.T, readme string) []string {
	_, section, found := strings.Cut(readme, "\n## Flags\n")
	if !found {
		t.Fatal("README has no ## Flags section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for line := range strings.SplitSeq(section, "\n") {
		if strings.HasPrefix(line, "| `--") {
			rows = append(rows, line)
		}
	}
	if len(rows) == 0 {
		t.Fatal("README's Flags section has no row naming a flag")
	}
	return rows
}

// namesVariable reports whether vars, a row's variables, name v: whole, or
// by a PREFIX_* that v begins with.
func namesVariable(vars []string, v string) bool {
	for _, name := range vars {
		if prefix, ok := strings.CutSuffix(name, "*"); ok && strings.HasPrefix(v, prefix) || name == v {
			return true
		}
	}
	return false
}
