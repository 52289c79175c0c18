// Package pbsettings declares PocketBase's settings that an operator sets
// at deploy time (the backups' schedule, retention and S3 storage, the
// SMTP server and the sender of its mails) from flags and PETSTORE_*
// variables, as Gitea and Grafana read theirs from a file. serve saves the
// declared ones at each start; the dashboard shows them, and refuses to
// change one (the flag that declares it wins at the next start anyway),
// while the settings nobody declared stay the dashboard's.
package pbsettings

import (
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"unicode"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/cron"
	"github.com/spf13/pflag"

	"petstore/internal/envflag"
)

// Config is what the flags declare; a zero field declares nothing.
type Config struct {
	BackupsCron string // the auto backups' cron expression
	BackupsKeep int    // how many auto backups to keep; -1: undeclared
	BackupsS3   S3

	SMTPHost         string // declares the SMTP server, and turns it on
	SMTPPort         int
	SMTPUsername     string
	SMTPPassword     string // from SMTPPasswordFile or PETSTORE_SMTP_PASSWORD
	SMTPPasswordFile string
	SMTPTLS          bool
	SenderName       string
	SenderAddress    string
}

// S3 is the backups' S3 storage; Bucket declares it, and turns it on.
type S3 struct {
	Bucket         string
	Region         string
	Endpoint       string
	AccessKey      string
	Secret         string // from SecretFile or PETSTORE_BACKUPS_S3_SECRET
	SecretFile     string
	ForcePathStyle bool
}

// DefaultSMTPPort is --smtp-port's default, the submission port.
const DefaultSMTPPort = 587

// Variables holding secrets, read directly (a flag would show them in the
// process list).
const (
	SMTPPasswordVar = "PETSTORE_SMTP_PASSWORD"
	S3SecretVar     = "PETSTORE_BACKUPS_S3_SECRET"
)

// AddFlags binds the flags of c on fs (serve's).
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.BackupsCron, "backups-cron", "",
		"PocketBase's auto backups, a cron expression in UTC (0 3 * * *), saved at each start; none: the dashboard's setting")
	fs.IntVar(&c.BackupsKeep, "backups-keep", -1,
		"how many auto backups to keep (0: every one), saved at each start; -1: the dashboard's setting")
	fs.StringVar(&c.BackupsS3.Bucket, "backups-s3-bucket", "",
		"keep PocketBase's backups (the auto backups', the dashboard's and petstore backup create's) in this S3 bucket, saved at each start; none: the dashboard's setting")
	fs.StringVar(&c.BackupsS3.Region, "backups-s3-region", "", "the backups bucket's region")
	fs.StringVar(&c.BackupsS3.Endpoint, "backups-s3-endpoint", "", "the backups bucket's S3 endpoint (https://s3.eu-central-1.amazonaws.com, or a compatible service's)")
	fs.StringVar(&c.BackupsS3.AccessKey, "backups-s3-access-key", "", "the backups bucket's access key id")
	fs.StringVar(&c.BackupsS3.SecretFile, "backups-s3-secret-file", "",
		"a file holding the backups bucket's secret access key (or the variable "+S3SecretVar+")")
	fs.BoolVar(&c.BackupsS3.ForcePathStyle, "backups-s3-force-path-style", false, "address the backups bucket by path (MinIO and some compatible services)")

	fs.StringVar(&c.SMTPHost, "smtp-host", "",
		"send PocketBase's mails (superusers' password resets, alerts) through this SMTP server, saved at each start; none: the dashboard's setting")
	fs.IntVar(&c.SMTPPort, "smtp-port", DefaultSMTPPort, "the SMTP server's port")
	fs.StringVar(&c.SMTPUsername, "smtp-username", "", "the SMTP user")
	fs.StringVar(&c.SMTPPasswordFile, "smtp-password-file", "",
		"a file holding the SMTP user's password (or the variable "+SMTPPasswordVar+")")
	fs.BoolVar(&c.SMTPTLS, "smtp-tls", false, "speak TLS from the connection's start (port 465); without it, STARTTLS when the server offers it")
	fs.StringVar(&c.SenderName, "smtp-sender-name", "", "the name mails come from, saved at each start; none: the dashboard's setting")
	fs.StringVar(&c.SenderAddress, "smtp-sender-address", "", "the address mails come from, saved at each start; none: the dashboard's setting")
}

// Load reads the secrets from their files or variables and checks c,
// naming the flag of the first value that cannot be used.
func (c *Config) Load() error {
	var err error
	if c.SMTPPassword, err = secret(c.SMTPPasswordFile, SMTPPasswordVar, "smtp-password-file"); err != nil {
		return err
	}
	if c.BackupsS3.Secret, err = secret(c.BackupsS3.SecretFile, S3SecretVar, "backups-s3-secret-file"); err != nil {
		return err
	}
	if c.BackupsCron != "" {
		if _, err := cron.NewSchedule(c.BackupsCron); err != nil {
			return invalid("backups-cron", c.BackupsCron, err)
		}
	}
	if c.BackupsKeep < -1 {
		return invalid("backups-keep", fmt.Sprint(c.BackupsKeep), fmt.Errorf("a count, 0 for every one"))
	}
	if err := needs("backups-s3-bucket", c.BackupsS3.Bucket, map[string]string{"backups-s3-region": c.BackupsS3.Region,
		"backups-s3-endpoint": c.BackupsS3.Endpoint, "backups-s3-access-key": c.BackupsS3.AccessKey,
		"backups-s3-secret-file": c.BackupsS3.SecretFile, "backups-s3-force-path-style": given(c.BackupsS3.ForcePathStyle)}); err != nil {
		return err
	}
	if c.BackupsS3.Endpoint != "" {
		if u, err := url.Parse(c.BackupsS3.Endpoint); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return invalid("backups-s3-endpoint", c.BackupsS3.Endpoint, fmt.Errorf("an http or https URL, e.g. https://s3.eu-central-1.amazonaws.com"))
		}
	}
	if c.BackupsS3.Bucket != "" && (c.BackupsS3.Endpoint == "" || c.BackupsS3.Region == "" || c.BackupsS3.AccessKey == "" || c.BackupsS3.Secret == "") {
		return invalid("backups-s3-bucket", c.BackupsS3.Bucket,
			fmt.Errorf("S3 needs --backups-s3-region, --backups-s3-endpoint, --backups-s3-access-key and the secret (--backups-s3-secret-file or %s) too", S3SecretVar))
	}
	smtpPort := ""
	if c.SMTPPort != DefaultSMTPPort {
		smtpPort = fmt.Sprint(c.SMTPPort)
	}
	if err := needs("smtp-host", c.SMTPHost, map[string]string{"smtp-port": smtpPort, "smtp-username": c.SMTPUsername,
		"smtp-password-file": c.SMTPPasswordFile, "smtp-tls": given(c.SMTPTLS)}); err != nil {
		return err
	}
	if c.SMTPHost != "" && !isHost(c.SMTPHost) {
		return invalid("smtp-host", c.SMTPHost, fmt.Errorf("a host name or IP address, without a port (--smtp-port)"))
	}
	if strings.ContainsFunc(c.SenderName, unicode.IsControl) {
		return invalid("smtp-sender-name", c.SenderName, fmt.Errorf("a name on one line, without control characters"))
	}
	if c.SMTPHost != "" && (c.SMTPPort < 1 || c.SMTPPort > 65535) {
		return invalid("smtp-port", fmt.Sprint(c.SMTPPort), fmt.Errorf("a port, 1 to 65535"))
	}
	if c.SenderAddress != "" {
		if a, err := mail.ParseAddress(c.SenderAddress); err != nil || a.Address != c.SenderAddress {
			return invalid("smtp-sender-address", c.SenderAddress, fmt.Errorf("an address, e.g. shop@example.org"))
		}
	}
	return nil
}

// needs refuses a flag of given (a flag's name: its value, empty when not
// given) when the flag that declares the setting, declaring, is not set:
// the value would be ignored.
func needs(declaring, value string, given map[string]string) error {
	if value != "" {
		return nil
	}
	for flag, v := range given {
		if v != "" {
			return invalid(flag, v, fmt.Errorf("it declares nothing without --%s", declaring))
		}
	}
	return nil
}

// given is a boolean flag's value as needs takes it.
func given(b bool) string {
	if b {
		return "true"
	}
	return ""
}

// isHost reports whether s is an IP address or a DNS name.
func isHost(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || strings.ContainsFunc(label, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
		}) {
			return false
		}
	}
	return len(s) <= 253
}

// secret is the value of file, or else of the variable name.
func secret(file, name, flag string) (string, error) {
	if file == "" {
		return os.Getenv(name), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--%s (or %s): %w", flag, envflag.Name(flag), err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func invalid(flag, value string, err error) error {
	return fmt.Errorf("invalid --%s (or %s) %q: %w", flag, envflag.Name(flag), value, err)
}

// field is one declared setting: the flag that declares it, and how to
// read it from the settings and write it into them.
type field struct {
	flag string
	get  func(*core.Settings) any
	set  func(*core.Settings)
}

// fields are the settings c declares.
func (c *Config) fields() []field {
	var fs []field
	add := func(flag string, get func(*core.Settings) any, set func(*core.Settings)) {
		fs = append(fs, field{flag, get, set})
	}
	if c.BackupsCron != "" {
		add("backups-cron", func(s *core.Settings) any { return s.Backups.Cron }, func(s *core.Settings) { s.Backups.Cron = c.BackupsCron })
	}
	if c.BackupsKeep >= 0 {
		add("backups-keep", func(s *core.Settings) any { return s.Backups.CronMaxKeep }, func(s *core.Settings) { s.Backups.CronMaxKeep = c.BackupsKeep })
	}
	if b := c.BackupsS3; b.Bucket != "" {
		want := core.S3Config{Enabled: true, Bucket: b.Bucket, Region: b.Region, Endpoint: b.Endpoint,
			AccessKey: b.AccessKey, Secret: b.Secret, ForcePathStyle: b.ForcePathStyle}
		add("backups-s3-*", func(s *core.Settings) any { return s.Backups.S3 }, func(s *core.Settings) { s.Backups.S3 = want })
	}
	if c.SMTPHost != "" {
		want := core.SMTPConfig{Enabled: true, Host: c.SMTPHost, Port: c.SMTPPort, Username: c.SMTPUsername,
			Password: c.SMTPPassword, TLS: c.SMTPTLS, AuthMethod: "PLAIN"}
		add("smtp-*", func(s *core.Settings) any {
			got := s.SMTP
			got.LocalName = "" // the dashboard's, not declared
			return got
		}, func(s *core.Settings) {
			local := s.SMTP.LocalName
			s.SMTP = want
			s.SMTP.LocalName = local
		})
	}
	if c.SenderName != "" {
		add("smtp-sender-name", func(s *core.Settings) any { return s.Meta.SenderName }, func(s *core.Settings) { s.Meta.SenderName = c.SenderName })
	}
	if c.SenderAddress != "" {
		add("smtp-sender-address", func(s *core.Settings) any { return s.Meta.SenderAddress }, func(s *core.Settings) { s.Meta.SenderAddress = c.SenderAddress })
	}
	return fs
}

// Apply saves the declared settings, when they differ from the saved ones,
// and logs which flags changed them (never their values: they hold
// secrets).
func (c *Config) Apply(app core.App, log *slog.Logger) error {
	settings := app.Settings()
	var changed []string
	for _, f := range c.fields() {
		before := f.get(settings)
		f.set(settings)
		if f.get(settings) != before {
			changed = append(changed, "--"+f.flag)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if err := app.Save(settings); err != nil {
		return fmt.Errorf("save the settings of %s: %w", strings.Join(changed, ", "), err)
	}
	log.Info("Settings saved from the flags", "flags", changed)
	return nil
}

// Guard refuses, in the dashboard and PocketBase's settings API, a change
// to a declared setting, naming the flag that declares it.
func (c *Config) Guard(app core.App) {
	fields := c.fields()
	if len(fields) == 0 {
		return
	}
	app.OnSettingsUpdateRequest().BindFunc(func(e *core.SettingsUpdateRequestEvent) error {
		for _, f := range fields {
			if f.get(e.NewSettings) != f.get(e.OldSettings) {
				vars := envflag.Name(f.flag)
				if group, ok := strings.CutSuffix(f.flag, "-*"); ok {
					vars = envflag.Name(group) + "_*"
				}
				return e.BadRequestError(fmt.Sprintf("This setting is declared by --%s (%s) at each start: change it there, then restart petstore.", f.flag, vars), nil)
			}
		}
		return e.Next()
	})
}
