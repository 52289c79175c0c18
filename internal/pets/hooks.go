package pets

import (
	"errors"
	"fmt"
	"strings"
	"time"

	validation "github.com/pocketbase/ozzo-validation/v4"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/fielderr"
	"petstore/internal/fixedcollections"
	"petstore/internal/strictinput"
)

// Fixed is the pets collection as fixed: its fields and rules are what
// /v1, its events and its audit rely on, and a rename would escape the
// record hooks below, bound by its name.
func Fixed() fixedcollections.Collection {
	return fixedcollections.Collection{Name: Collection, Refusal: "the pets collection cannot be renamed, changed, emptied or deleted: " +
		"its fields and rules are the service's. Add, change and delete animals as its records, in the dashboard or through /v1"}
}

// Bind applies the pets rules to pets saved as records: in the dashboard or
// through PocketBase's records API. A record saved without an id gets one
// from the clock /v1's creates draw from.
func Bind(app core.App) {
	normalize := func(e *core.RecordEvent) error {
		e.Record.Set("name", Name(e.Record.GetString("name")))
		return e.Next()
	}
	// Before PocketBase's own create hook (priority -99), which fills an
	// empty id from the field's pattern.
	app.OnRecordCreate(Collection).Bind(&hook.Handler[*core.RecordEvent]{
		Func: func(e *core.RecordEvent) error {
			if e.Record.Id == "" {
				e.Record.Id = ids.next(time.Now())
			}
			return e.Next()
		},
		Priority: -100,
	})
	app.OnRecordCreate(Collection).BindFunc(func(e *core.RecordEvent) error {
		e.Record.Set("status", NewStatus(e.Record.GetString("status")))
		return normalize(e)
	})
	app.OnRecordUpdate(Collection).BindFunc(normalize)
	app.OnRecordValidate(Collection).BindFunc(refuseUnprintableName)
	app.OnRecordValidate(Collection).BindFunc(sayWhatToEnter)
}

// errUnprintableName is the kind of the refusal of a name that holds
// control or text-direction characters.
var errUnprintableName = &fielderr.Kind{Code: "validation_unprintable"}

// refuseUnprintableName refuses a name holding control or text-direction
// characters, as /v1 does.
func refuseUnprintableName(e *core.RecordEvent) error {
	if strings.ContainsFunc(e.Record.GetString("name"), strictinput.Unprintable) {
		return fielderr.New(errUnprintableName, "name",
			"the name cannot hold control, text-direction or invisible characters (newline, U+202E, U+200B and the like)")
	}
	return e.Next()
}

// petFieldsToEnter says, for the pets fields a new record leaves empty,
// what to enter. The dashboard's form shows an untouched number as 0, and
// PocketBase's "Cannot be blank." beside a 0 tells staff nothing.
var petFieldsToEnter = map[string]string{
	"name":       fmt.Sprintf("Enter the animal's name: 1 to %d characters.", MaxNameLen),
	"categoryId": fmt.Sprintf("Enter the animal's category: a whole number from 1 to %d (the categories collection names them).", int64(MaxCategoryID)),
}

// sayWhatToEnter replaces PocketBase's "Cannot be blank." for the fields
// above with what to enter; every other error stays as it is.
func sayWhatToEnter(e *core.RecordEvent) error {
	err := e.Next()
	var errs validation.Errors
	if errors.As(err, &errs) {
		for field, say := range petFieldsToEnter {
			var fieldErr validation.Error
			if errors.As(errs[field], &fieldErr) && fieldErr.Code() == validation.ErrRequired.Code() {
				errs[field] = validation.NewError(fieldErr.Code(), say)
			}
		}
	}
	return err
}
