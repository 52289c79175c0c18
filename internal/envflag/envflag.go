// Package envflag gives command-line flags environment variables: --NAME
// reads PETSTORE_NAME (upper case, dashes and camel case as underscores)
// when the command line does not set it. The flag wins over its variable.
package envflag

import (
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
)

// Prefix begins every variable's name.
const Prefix = "PETSTORE_"

// Name is the variable of the flag called flag: ratelimit-redis is
// PETSTORE_RATELIMIT_REDIS, encryptionEnv is PETSTORE_ENCRYPTION_ENV.
func Name(flag string) string {
	var b strings.Builder
	b.WriteString(Prefix)
	for i, r := range flag {
		switch {
		case r == '-':
			b.WriteByte('_')
		case unicode.IsUpper(r) && i > 0:
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteRune(unicode.ToUpper(r))
		}
	}
	return b.String()
}

// Document adds the variable's name to the help of each flag of fs that
// skip does not name.
func Document(fs *pflag.FlagSet, skip ...string) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !skipped(f.Name, skip) && !strings.Contains(f.Usage, Name(f.Name)) {
			f.Usage += " (env " + Name(f.Name) + ")"
		}
	})
}

// Apply sets each flag of fs that the command line left unset, and that
// skip does not name, from its variable when the variable is set (to
// anything, the empty string included). It sets the flag's value, not its
// default: --help shows the default and never a variable's value (a Redis
// password). A value the flag refuses is an error naming the variable.
func Apply(fs *pflag.FlagSet, skip ...string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || skipped(f.Name, skip) {
			return
		}
		name := Name(f.Name)
		v, ok := os.LookupEnv(name)
		if !ok {
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("invalid %s %q (for --%s): %w", name, v, f.Name, e)
		}
	})
	return err
}

func skipped(name string, skip []string) bool {
	for _, s := range skip {
		if s == name {
			return true
		}
	}
	return false
}
