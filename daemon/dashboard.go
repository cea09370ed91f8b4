package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/train"
)

// Dashboard is the live web page of a run, served by the coordinator's
// HTTP address: /ui is a self-contained page (inline CSS and script, no
// external assets) that polls /api/status, which returns the run's state
// from Redis (train.CollectStatus: stage, phase, versions, per-stage
// rates, configs and the engineer's rationale, checkpoints, the learner's
// flow: groups used, kept late and discarded by reason, time dispatch
// waited for the learner) plus the cluster's nodes.
type Dashboard struct {
	st    *store.Store
	ps    *train.PolicyStore
	run   string
	nodes func() []cluster.NodeMeta
	// flow, fed by train.Options.OnFlow in this process, is fresher than
	// the flow record in Redis.
	flow atomic.Pointer[train.FlowRecord]
}

// NewDashboard returns the live page of run in st; ps holds the run's
// flow record (nil: none but what this process's run reports). nodes
// lists the cluster's members (nil on a one-process run).
func NewDashboard(st *store.Store, ps *train.PolicyStore, run string, nodes func() []cluster.NodeMeta) *Dashboard {
	return &Dashboard{st: st, ps: ps, run: run, nodes: nodes}
}

// onFlow is train.Options.OnFlow for the run this page shows.
func (d *Dashboard) onFlow(f train.FlowRecord) {
	if f.RunID == d.run {
		d.flow.Store(&f)
	}
}

// pageStatus is /api/status.
type pageStatus struct {
	*train.Status
	Nodes   []pageNode `json:"nodes"`
	NowUnix int64      `json:"now_unix_ms"`
}

// pageNode is one member of the cluster as /api/status lists it.
type pageNode struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Roles    []cluster.Role `json:"roles"`
	Address  string         `json:"address"`
	Capacity int            `json:"capacity"`
}

func (d *Dashboard) register(mux *http.ServeMux) {
	mux.HandleFunc("/ui", d.page)
	mux.HandleFunc("/api/status", d.status)
}

func (d *Dashboard) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	out, err := d.read(ctx, time.Now())
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(out)
}

// read is /api/status at now.
func (d *Dashboard) read(ctx context.Context, now time.Time) (*pageStatus, error) {
	rep, err := train.CollectStatus(ctx, d.st, d.ps, d.run)
	if err != nil {
		return nil, err
	}
	if f := d.flow.Load(); f != nil {
		rep.SetFlow(f)
	}
	out := &pageStatus{Status: rep, NowUnix: now.UnixMilli(), Nodes: []pageNode{}}
	if d.nodes != nil {
		for _, n := range d.nodes() {
			out.Nodes = append(out.Nodes, pageNode{ID: n.ID, Name: n.Name, Roles: n.Roles, Address: n.Address, Capacity: n.Capacity})
		}
	}
	return out, nil
}

func (d *Dashboard) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(dashboardHTML))
}

// dashboardHTML renders /api/status every 2 s: run state, learning curves
// per stage (inline SVG), the config each stage trained on with the
// engineer's rationale, and the nodes.
const dashboardHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>t2t run</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.4em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f3f3f3}td.l{text-align:left;max-width:40em}
#err{color:#b00}.k{color:#666}#warn{color:#b00;font-weight:bold}
</style></head><body>
<h1>t2t run <span id="run">…</span></h1>
<div id="err"></div>
<p id="state" class="k">loading…</p>
<p id="flow" class="k"></p><p id="warn"></p>
<h2>Learning curves (validation and 3/4/5-agent benchmark, valid %)</h2>
<svg id="curves" width="640" height="260" viewBox="0 0 640 260" role="img" aria-label="learning curves"></svg>
<h2>Stages</h2>
<table id="stages"><thead><tr><th>stage</th><th>units</th><th>train valid %</th><th>val valid / opt %</th><th>3 agents</th><th>4 agents</th><th>5 agents</th><th>updates</th><th>discarded groups</th><th>waited for learner</th><th>config</th><th class="l">engineer</th></tr></thead><tbody></tbody></table>
<h2>Latest config change</h2><pre id="diff">-</pre>
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>name</th><th>roles</th><th>address</th><th>capacity</th></tr></thead><tbody></tbody></table>
<script>
function pct(x){return (100*(x||0)).toFixed(1)}
function cell(t,cls){var td=document.createElement('td');td.textContent=t;if(cls)td.className=cls;return td}
function curves(stages){
  var svg=document.getElementById('curves');while(svg.firstChild)svg.removeChild(svg.firstChild);
  var ns='http://www.w3.org/2000/svg',W=640,H=260,L=40,B=30,n=Math.max(stages.length,2);
  function el(tag,attrs,text){var e=document.createElementNS(ns,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text)e.textContent=text;svg.appendChild(e);return e}
  el('line',{x1:L,y1:H-B,x2:W-10,y2:H-B,stroke:'#888'});el('line',{x1:L,y1:10,x2:L,y2:H-B,stroke:'#888'});
  for(var y=0;y<=100;y+=25){var py=H-B-(H-B-10)*y/100;el('text',{x:4,y:py+4,'font-size':10},y+'%')}
  var series=[['val',function(s){return s.val.valid},'#333'],['3 agents',function(s){return (s.eval_paper||{})[3]?s.eval_paper[3].valid:null},'#1f77b4'],
    ['4 agents',function(s){return (s.eval_paper||{})[4]?s.eval_paper[4].valid:null},'#ff7f0e'],['5 agents',function(s){return (s.eval_paper||{})[5]?s.eval_paper[5].valid:null},'#2ca02c']];
  series.forEach(function(se,i){
    var pts=[];stages.forEach(function(s,j){var v=se[1](s);if(v!=null)pts.push((L+(W-L-10)*j/(n-1)).toFixed(1)+','+(H-B-(H-B-10)*v).toFixed(1))});
    if(pts.length)el('polyline',{points:pts.join(' '),fill:'none',stroke:se[2],'stroke-width':2,'class':'series'});
    el('text',{x:L+10+i*120,y:H-8,fill:se[2],'font-size':11},se[0]);
  });
}
function secs(ns){return ((ns||0)/1e9).toFixed(1)+' s'}
function discards(f){if(!f)return '-';var n=f.discarded_stale+f.discarded_late_stage+f.discarded_duplicate;if(!n)return '0';
  var why=[];if(f.discarded_stale)why.push('stale '+f.discarded_stale);if(f.discarded_late_stage)why.push('late stage '+f.discarded_late_stage);
  if(f.discarded_duplicate)why.push('duplicate '+f.discarded_duplicate);return n+' ('+(100*n/Math.max(f.arrived,1)).toFixed(1)+'%: '+why.join(', ')+')'}
function flowLine(fr){var t=fr.total,n=t.discarded_stale+t.discarded_late_stage+t.discarded_duplicate;
  return 'learner: '+t.arrived+' groups arrived, '+t.used+' used ('+t.late_kept+' kept late), '+discards(t)+' discarded; '+t.updates+' updates; dispatch waited '+secs(t.learner_wait_ns)+' for the learner (max lag '+(fr.max_lag<0?'off':fr.max_lag)+', K '+fr.staleness_k+')'}
function render(d){
  document.getElementById('run').textContent=d.run;document.getElementById('err').textContent='';
  var s=d.state||{};
  document.getElementById('state').textContent='stage '+s.stage+' · phase '+s.phase+' · policy version '+s.policy_version+' · config '+(s.config_version||'-');
  var fr=d.flow;document.getElementById('flow').textContent=fr?flowLine(fr):'';
  var share=fr&&fr.total.arrived?(fr.total.discarded_stale+fr.total.discarded_late_stage+fr.total.discarded_duplicate)/fr.total.arrived:0;
  document.getElementById('warn').textContent=share>0.05?'Warning: '+(100*share).toFixed(1)+'% of the groups were discarded (more than 5%): rollout work is wasted.':'';
  var tb=document.querySelector('#stages tbody');tb.innerHTML='';
  (d.stages||[]).forEach(function(st){
    var tr=document.createElement('tr');var e=st.eval_paper||{};
    [st.stage,st.units,pct(st.train.valid),pct(st.val.valid)+' / '+pct(st.val.optimal)].forEach(function(v){tr.appendChild(cell(v))});
    [3,4,5].forEach(function(k){tr.appendChild(cell(e[k]?pct(e[k].valid)+' / '+pct(e[k].optimal):'-'))});
    tr.appendChild(cell(st.flow?st.flow.updates:'-'));tr.appendChild(cell(discards(st.flow)));tr.appendChild(cell(st.flow?secs(st.flow.learner_wait_ns):'-'));
    tr.appendChild(cell(st.config_version));tr.appendChild(cell((st.proposer||'')+(st.rationale?': '+st.rationale:''),'l'));tb.appendChild(tr);
  });
  curves(d.stages||[]);
  document.getElementById('diff').textContent=d.config_diff||'-';
  var nb=document.querySelector('#nodes tbody');nb.innerHTML='';
  (d.nodes||[]).forEach(function(n){var tr=document.createElement('tr');[n.name||n.id,(n.roles||[]).join(','),n.address,n.capacity].forEach(function(v){tr.appendChild(cell(v))});nb.appendChild(tr)});
}
function poll(){fetch('/api/status',{cache:'no-store'}).then(function(r){return r.json()}).then(function(d){if(d.error){document.getElementById('err').textContent=d.error}else{render(d)}}).catch(function(e){document.getElementById('err').textContent=String(e)})}
poll();setInterval(poll,2000);
</script></body></html>`
