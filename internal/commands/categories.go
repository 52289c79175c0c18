package commands

import (
	"fmt"
	"text/tabwriter"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/internal/strictinput"
)

// NewCategoriesCommand returns `categories create|list|rename|delete`,
// working on app's --dir. Its errors are the command's: main prints them and
// exits 1.
func NewCategoriesCommand(app core.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "categories",
		Short: "Create, list, rename and delete the categories that name the pets' categoryId numbers",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// PocketBase applies migrations only in `serve`.
		PersistentPreRunE: func(*cobra.Command, []string) error { return app.RunAllMigrations() },
	}
	c.AddCommand(categoryCreateCommand(app), categoryListCommand(app), categoryRenameCommand(app), categoryDeleteCommand(app))
	return c
}

func categoryCreateCommand(app core.App) *cobra.Command {
	var number int64
	var name, description string
	cmd := &cobra.Command{
		Use:   "create [--id N] --name NAME [--description TEXT]",
		Short: "Create a category; without --id, it gets the next number no category or pet uses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required")
			}
			if cmd.Flags().Changed("id") && (number < 1 || number > categories.MaxNumber) {
				return fmt.Errorf("--id: %w", categories.ErrNumberInvalid)
			}
			c, err := categories.Create(app, number, name, description, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created category %d, %s.\n", c.Number(), c.Name())
			return nil
		},
	}
	cmd.Flags().Int64Var(&number, "id", 0, "the category's number, the categoryId its pets carry (default: the one after the highest number a category or pet uses)")
	cmd.Flags().StringVar(&name, "name", "", "the category's name, e.g. Dogs (required)")
	cmd.Flags().StringVar(&description, "description", "", "what the category holds")
	return cmd
}

func categoryListCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the categories and the numbers pets carry that no category names, with their pets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			uses, err := categories.Uses(app)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPETS")
			for _, u := range uses {
				name := u.Name
				if name == "" {
					name = "(" + categories.Unnamed(u.ID) + ")"
				}
				fmt.Fprintf(w, "%d\t%s\t%d\n", u.ID, name, u.Pets)
			}
			return w.Flush()
		},
	}
}

func categoryRenameCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID NAME",
		Short: "Rename the category with number ID",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			number, err := parseCategoryNumber(args[0])
			if err != nil {
				return err
			}
			c, err := categories.Rename(app, number, args[1], audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Category %d is now %s.\n", c.Number(), c.Name())
			return nil
		},
	}
}

func categoryDeleteCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete the category with number ID; refused while pets carry it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			number, err := parseCategoryNumber(args[0])
			if err != nil {
				return err
			}
			if err := categories.Delete(app, number, audit.CLI); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted category %d.\n", number)
			return nil
		},
	}
}

// parseCategoryNumber reads a category's number from the command line.
func parseCategoryNumber(s string) (int64, error) {
	n, err := strictinput.PositiveDecimal(s)
	if err != nil || n > categories.MaxNumber {
		return 0, fmt.Errorf("ID %q: %w", s, categories.ErrNumberInvalid)
	}
	return n, nil
}
