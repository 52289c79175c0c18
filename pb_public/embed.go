// Package pbpublic is the site served at /, embedded in the binary. Only the
// files matched below are served (this Go file is not).
package pbpublic

import "embed"

//go:embed *.html
var FS embed.FS
