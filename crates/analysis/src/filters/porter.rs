//! The Porter stemming algorithm as Lucene's `PorterStemmer` implements it (Martin Porter's
//! reference implementation with its two departures: `bli` → `ble` and `logi` → `log`).
//! Used by the `porter_stem` token filter and the `smartcn` analyzer.
//!
//! Written here rather than taken from a crate because the stemmer crates implement the
//! Snowball "Porter2" English stemmer, which stems differently (e.g. `generously`), and the
//! analyzers must index the terms Lucene indexes.

struct Stemmer {
    b: Vec<char>,
    /// End of the current word (inclusive).
    k: usize,
    /// End of the stem found by the last successful `ends` (inclusive; may be "before 0").
    j: isize,
}

impl Stemmer {
    fn cons(&self, i: usize) -> bool {
        match self.b[i] {
            'a' | 'e' | 'i' | 'o' | 'u' => false,
            'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The number of consonant sequences between 0 and `j`.
    fn m(&self) -> usize {
        let j = self.j;
        let mut n = 0;
        let mut i: isize = 0;
        loop {
            if i > j {
                return n;
            }
            if !self.cons(i as usize) {
                break;
            }
            i += 1;
        }
        i += 1;
        loop {
            loop {
                if i > j {
                    return n;
                }
                if self.cons(i as usize) {
                    break;
                }
                i += 1;
            }
            i += 1;
            n += 1;
            loop {
                if i > j {
                    return n;
                }
                if !self.cons(i as usize) {
                    break;
                }
                i += 1;
            }
            i += 1;
        }
    }

    fn vowel_in_stem(&self) -> bool {
        (0..=self.j).any(|i| !self.cons(i as usize))
    }

    fn double_c(&self, j: usize) -> bool {
        j >= 1 && self.b[j] == self.b[j - 1] && self.cons(j)
    }

    /// Consonant-vowel-consonant ending at `i`, the last consonant not `w`, `x` or `y`.
    fn cvc(&self, i: isize) -> bool {
        if i < 2 {
            return false;
        }
        let i = i as usize;
        if !self.cons(i) || self.cons(i - 1) || !self.cons(i - 2) {
            return false;
        }
        !matches!(self.b[i], 'w' | 'x' | 'y')
    }

    fn ends(&mut self, s: &str) -> bool {
        let len = s.chars().count();
        if len > self.k + 1 {
            return false;
        }
        let from = self.k + 1 - len;
        if !self.b[from..=self.k].iter().copied().eq(s.chars()) {
            return false;
        }
        self.j = from as isize - 1;
        true
    }

    fn set_to(&mut self, s: &str) {
        let at = (self.j + 1) as usize;
        self.b.truncate(at);
        self.b.extend(s.chars());
        self.k = (self.j + s.chars().count() as isize) as usize;
    }

    fn r(&mut self, s: &str) {
        if self.m() > 0 {
            self.set_to(s);
        }
    }

    /// Plurals and -ed / -ing.
    fn step1(&mut self) {
        if self.b[self.k] == 's' {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.set_to("i");
            } else if self.b[self.k - 1] != 's' {
                self.k -= 1;
            }
        }
        self.b.truncate(self.k + 1);
        if self.ends("eed") {
            if self.m() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            self.k = self.j as usize;
            self.b.truncate(self.k + 1);
            if self.ends("at") {
                self.set_to("ate");
            } else if self.ends("bl") {
                self.set_to("ble");
            } else if self.ends("iz") {
                self.set_to("ize");
            } else if self.double_c(self.k) {
                let ch = self.b[self.k];
                if !matches!(ch, 'l' | 's' | 'z') {
                    self.k -= 1;
                }
            } else {
                self.j = self.k as isize;
                if self.m() == 1 && self.cvc(self.k as isize) {
                    self.set_to("e");
                }
            }
        }
        self.b.truncate(self.k + 1);
    }

    /// Terminal y → i when there is another vowel in the stem.
    fn step2(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            self.b[self.k] = 'i';
        }
    }

    /// Double suffixes to single ones.
    fn step3(&mut self) {
        if self.k == 0 {
            return;
        }
        let rules: &[(&str, &str)] = match self.b[self.k - 1] {
            'a' => &[("ational", "ate"), ("tional", "tion")],
            'c' => &[("enci", "ence"), ("anci", "ance")],
            'e' => &[("izer", "ize")],
            'l' => &[
                ("bli", "ble"),
                ("alli", "al"),
                ("entli", "ent"),
                ("eli", "e"),
                ("ousli", "ous"),
            ],
            'o' => &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            's' => &[
                ("alism", "al"),
                ("iveness", "ive"),
                ("fulness", "ful"),
                ("ousness", "ous"),
            ],
            't' => &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            'g' => &[("logi", "log")],
            _ => &[],
        };
        self.apply_first(rules);
    }

    /// -ic-, -full, -ness etc.
    fn step4(&mut self) {
        let rules: &[(&str, &str)] = match self.b[self.k] {
            'e' => &[("icate", "ic"), ("ative", ""), ("alize", "al")],
            'i' => &[("iciti", "ic")],
            'l' => &[("ical", "ic"), ("ful", "")],
            's' => &[("ness", "")],
            _ => &[],
        };
        self.apply_first(rules);
    }

    fn apply_first(&mut self, rules: &[(&str, &str)]) {
        for (suffix, replacement) in rules {
            if self.ends(suffix) {
                self.r(replacement);
                return;
            }
        }
    }

    /// -ant, -ence etc. in context <c>vcvc<v>.
    fn step5(&mut self) {
        if self.k == 0 {
            return;
        }
        let suffixes: &[&str] = match self.b[self.k - 1] {
            'a' => &["al"],
            'c' => &["ance", "ence"],
            'e' => &["er"],
            'i' => &["ic"],
            'l' => &["able", "ible"],
            'n' => &["ant", "ement", "ment", "ent"],
            'o' => {
                if self.ends("ion") && self.j >= 0 && matches!(self.b[self.j as usize], 's' | 't') {
                    return self.step5_cut();
                }
                &["ou"]
            }
            's' => &["ism"],
            't' => &["ate", "iti"],
            'u' => &["ous"],
            'v' => &["ive"],
            'z' => &["ize"],
            _ => return,
        };
        if suffixes.iter().any(|s| self.ends(s)) {
            self.step5_cut();
        }
    }

    fn step5_cut(&mut self) {
        if self.m() > 1 {
            self.k = self.j as usize;
            self.b.truncate(self.k + 1);
        }
    }

    /// A final -e if m() > 1, and -ll → -l if m() > 1.
    fn step6(&mut self) {
        self.j = self.k as isize;
        if self.b[self.k] == 'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !self.cvc(self.k as isize - 1)) {
                self.k -= 1;
            }
        }
        if self.b[self.k] == 'l' && self.double_c(self.k) && self.m() > 1 {
            self.k -= 1;
        }
        self.b.truncate(self.k + 1);
    }
}

/// Stems `word` into `out`; returns whether it changed. Words of 1 or 2 characters are kept.
pub(crate) fn stem(word: &str, out: &mut String) -> bool {
    let b: Vec<char> = word.chars().collect();
    if b.len() <= 2 {
        return false;
    }
    let mut s = Stemmer {
        k: b.len() - 1,
        b,
        j: 0,
    };
    s.step1();
    s.step2();
    s.step3();
    s.step4();
    s.step5();
    s.step6();
    out.clear();
    out.extend(&s.b[..=s.k]);
    out != word
}

#[cfg(test)]
mod tests {
    use super::stem;

    fn st(w: &str) -> String {
        let mut out = String::new();
        if stem(w, &mut out) {
            out
        } else {
            w.to_string()
        }
    }

    #[test]
    fn porter_reference_words() {
        // Pairs from Porter's published voc.txt / output.txt.
        for (w, s) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
            ("generously", "gener"),
            ("title", "titl"),
            ("tests", "test"),
            ("is", "is"),
        ] {
            assert_eq!(st(w), s, "{w}");
        }
    }
}
