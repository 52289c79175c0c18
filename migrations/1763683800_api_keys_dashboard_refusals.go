package migrations

import (
	"strings"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// A save in the dashboard that changes a field only the service writes is
// refused with what to do instead, no longer ignored: the fields' help says
// so.
func init() {
	m.Register(func(app core.App) error {
		return rewriteAPIKeyHelp(app, refusedHelp)
	}, func(app core.App) error {
		old := make([][2]string, len(refusedHelp))
		for i, r := range refusedHelp {
			old[i] = [2]string{r[1], r[0]}
		}
		return rewriteAPIKeyHelp(app, old)
	})
}

// refusedHelp is each replacement in api_keys' help, old text first, in the
// order they apply.
var refusedHelp = [][2]string{
	{"edits here are ignored, so that a form opened earlier cannot turn it back.", "a save here that changes it is refused, and a form opened earlier cannot turn it back."},
	{"edits here are ignored, so that a form opened earlier cannot widen them.", "a save here that changes them is refused, and a form opened earlier cannot widen them."},
	{"edits here are ignored.", "a save here that changes it is refused."},
}

func rewriteAPIKeyHelp(app core.App, replacements [][2]string) error {
	keys, err := app.FindCollectionByNameOrId("api_keys")
	if err != nil {
		return err
	}
	for _, f := range keys.Fields {
		help := helpOf(f)
		for _, r := range replacements {
			help = strings.ReplaceAll(help, r[0], r[1])
		}
		if help != helpOf(f) {
			setHelp(f, help)
		}
	}
	return app.Save(keys)
}
