// MathJax set-up for pymdownx.arithmatex (generic mode): render \( \) and \[ \] produced from $...$ and $$...$$.
window.MathJax = {
  tex: { inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true, processEnvironments: true },
  options: { ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex" }
};
