// Package pbpublic is the site served at /, embedded in the binary. Only the
// files matched below are served (this Go file is not).
//
// docs/ is the API reference page; docs/redoc/ holds Redoc 2.5.4's
// standalone bundle with its licences, from the npm package redoc@2.5.4.
package pbpublic

import "embed"

//go:embed *.html docs/*.html docs/redoc
var FS embed.FS
