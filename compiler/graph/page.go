package graph

import "html/template"

// pageTemplate is the whole page: no script, no external resource. It is
// written as well-formed XML (void elements closed, no raw & or < in the
// style) so that a test, or a reviewer's tool, can parse it strictly.
var pageTemplate = template.Must(template.New("graph").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#1d2330;background:#fff}
h1{font-size:18px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px;border-bottom:1px solid #ccd}
h3{font-size:13px;margin:14px 0 4px}
.meta,.summary{color:#556}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #dde;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f8}
code,.at{font:12px ui-monospace,monospace;color:#445}
section.plan{border-left:3px solid #dde;padding-left:10px;margin:12px 0}
.added{background:#e3f7e6}.modified{background:#fff3d6}.removed{background:#fde4e4;text-decoration:line-through}
section.plan.added{border-left-color:#2e9b48}section.plan.modified{border-left-color:#d29a13}
ul.refs{margin:2px 0;padding-left:18px;columns:3}
svg text{font:12px system-ui,sans-serif;fill:#1d2330}svg text.sub{font-size:11px;fill:#556}svg text.elabel{font-size:10px;fill:#667}
svg .cand rect{fill:#eef3fb;stroke:#5b7db8}svg .cand.provider_compat rect{fill:#f4eefb;stroke:#8a63b8}
svg .cand.translation rect{fill:#fbf3ea;stroke:#b8864f}
svg .cand.added rect{stroke:#2e9b48;stroke-width:3}svg .cand.modified rect{stroke:#d29a13;stroke-width:3}
svg .edge line,svg .edge path{stroke:#6b7590;stroke-width:1.5}svg .edge.failover line,svg .edge.failover path{stroke:#c0392b;stroke-dasharray:5 3}
svg marker path{fill:#6b7590}svg .provider rect{fill:#f3f4f8;stroke:#99a}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">source <code>{{.SourceHash}}</code>{{if .Digest}} · digest <code>{{.Digest}}</code>{{end}} · {{.Providers}} providers · {{.Plans}} plans (each shown once per profile, with every route and name that reaches it)</p>
{{if .Diffed}}<p class="summary" id="diff">against the base: {{.Added}} plans added, {{.Removed}} removed, {{.Modified}} modified</p>
{{if .RemovedRefs}}<ul class="gone">{{range .RemovedRefs}}<li class="removed">{{.}}</li>{{end}}</ul>{{end}}{{end}}
<h2>Providers and failover</h2>
{{.Failover}}
{{range .Profiles}}<div class="profile" data-profile="{{.Name}}">
<h2 id="profile-{{.Name}}">Profile {{.Name}}</h2>
<table class="profile"><tr><th>allowed_models</th><td>{{.AllowedModels}}</td></tr><tr><th>require_caps</th><td>{{.RequireCaps}}</td></tr><tr><th>pool_subset</th><td>{{.PoolSubset}}</td></tr><tr><th>on_fidelity_loss</th><td>{{.LossAction}}</td></tr></table>
{{if .Budgets}}<h3>Budgets</h3><table class="budgets">{{range .Budgets}}<tr><th>{{.Name}}</th><td>{{.Text}}</td><td class="at">{{.At}}</td></tr>{{end}}</table>{{end}}
{{if .Rules}}<h3>Access rules</h3><table class="rules">{{range .Rules}}<tr><th>{{.Name}}</th><td>{{.Text}}</td><td class="at">{{.At}}</td></tr>{{end}}</table>{{end}}
{{range .Plans}}<section class="plan{{if .Mark}} {{.Mark}}{{end}}" id="{{.ID}}" data-profile="{{.Profile}}">
<ul class="refs">{{range .Refs}}<li{{if .Mark}} class="{{.Mark}}"{{end}}>{{.Text}}</li>{{end}}</ul>
<p class="summary">{{.Summary}}</p>
{{.SVG}}
{{if .Candidates}}<table class="candidates"><tr><th>#</th><th>candidate</th><th>fields</th><th>at</th></tr>{{range $i, $c := .Candidates}}<tr class="cand{{if .Mark}} {{.Mark}}{{end}}" data-name="{{.Name}}"><td>{{$i}}</td><td>{{.Name}}</td><td>{{.Text}}</td><td class="at">{{.At}}</td></tr>{{end}}</table>{{end}}
{{if .Skips}}<table class="skips"><tr><th>skipped at build</th><th>at</th></tr>{{range .Skips}}<tr class="skip{{if .Mark}} {{.Mark}}{{end}}" data-name="{{.Name}}"><td>{{.Name}}</td><td class="at">{{.At}}</td></tr>{{end}}</table>{{end}}
{{if .Gone}}<ul class="gone">{{range .Gone}}<li class="removed">{{.}}</li>{{end}}</ul>{{end}}
{{if .Changes}}<ul class="changes">{{range .Changes}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
</section>
{{end}}</div>
{{end}}</body>
</html>
`))
