package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// chatFlags are the flags of the commands that render chat templates.
type chatFlags struct {
	template, date, kwargs *string
}

func addChatFlags(fs *flag.FlagSet) chatFlags {
	return chatFlags{
		template: fs.String("chat-template", "", "Jinja file to use instead of the tokenizer's chat template"),
		date:     fs.String("date", "", "render date `YYYY-MM-DD` for templates that print today's date (strftime_now); default today"),
		kwargs:   fs.String("template-kwargs", "", "template arguments as a JSON object, as apply_chat_template's kwargs: '{\"enable_thinking\": false}'"),
	}
}

// compile compiles the chat template the flags describe. A template that
// prints the date without --date renders today's, and says so on stderr.
func (f chatFlags) compile(env *cmdEnv, name string, tok *tokenizer.Tokenizer, path string) (*chat.Template, error) {
	var opts []chat.Option
	if *f.template != "" {
		src, err := os.ReadFile(*f.template)
		if err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--chat-template: %w", err)}
		}
		opts = append(opts, chat.WithSource(string(src)))
	}
	day := time.Now()
	if *f.date != "" {
		d, err := chat.ParseDate(*f.date)
		if err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--date: %w", err)}
		}
		day = d
	}
	opts = append(opts, chat.WithNow(func() time.Time { return day }))
	if *f.kwargs != "" {
		kw, err := chat.ParseKwargs([]byte(*f.kwargs))
		if err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--template-kwargs: %w", err)}
		}
		opts = append(opts, chat.WithKwargs(kw))
	}
	tmpl, err := chat.New(tok, opts...)
	if errors.Is(err, chat.ErrNoTemplate) {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s has no chat template; pass --chat-template", path)}
	} else if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if tmpl.PrintsDate() && *f.date == "" {
		fmt.Fprintf(env.stderr, "eaglet %s: the chat template prints today's date; rendering with %s (pass --date to pin it)\n", name, day.Format(time.DateOnly))
	}
	return tmpl, nil
}
